#include "textflag.h"

// Offsets in the kernel's siginfo_t and ucontext_t on linux/amd64.
#define SI_CODE 8
#define SI_ADDR 16
#define UC_RBP 120
#define UC_RSP 160
#define UC_RIP 168

// Layout of an Entry and a chunk (guardpage.go).
#define ENTRY_SEQ 0
#define ENTRY_LO 8
#define ENTRY_HI 16
#define ENTRY_CTX 24
#define ENTRY_SIZE 32
#define CHUNK_ENTRIES 64

// Execution context offsets and the exit code (guardpage.go).
#define CTX_EXIT_CODE 0
#define CTX_ORIGINAL_FP 16
#define CTX_ORIGINAL_SP 24
#define CTX_GO_CALL_RETURN_ADDRESS 48
#define CTX_SP_BEFORE_GO_CALL 56
#define CTX_FP_BEFORE_GO_CALL 1152
#define EXIT_CODE_MEMORY_OUT_OF_BOUNDS 4

// sigtramp is installed as the SIGSEGV handler (SA_SIGINFO, on the signal
// stack), called by the kernel with the signal in DI, the siginfo_t in SI
// and the ucontext_t in DX. A fault the kernel raised at an address inside a
// guard-page reservation, on the stack of a call in progress, is a wasm
// out-of-bounds access: it records the trap in the call's execution context
// as the compiled exit sequence would (exit code; RSP, RBP and RIP for the
// stack trace) and resumes at the exit's destination, the return from the
// call's entry into Go. Anything else jumps to the Go runtime's handler
// with DI, SI, DX and the stack as the kernel left them.
TEXT ·sigtramp(SB), NOSPLIT|NOFRAME, $0
	CMPL DI, $11 // SIGSEGV
	JNE  chain
	CMPL SI_CODE(SI), $0 // SEGV_MAPERR or SEGV_ACCERR; <= 0 is a signal sent by a process
	JLE  chain

	MOVQ  SI_ADDR(SI), R8
	LEAQ  ·regions(SB), R9
	CALL  lookup<>(SB)
	TESTQ R11, R11
	JZ    chain

	MOVQ  UC_RSP(DX), R8
	LEAQ  ·stacks(SB), R9
	CALL  lookup<>(SB)
	TESTQ R11, R11
	JZ    chain

	// R10 is the execution context.
	LOCK
	INCQ ·traps(SB)
	MOVL $EXIT_CODE_MEMORY_OUT_OF_BOUNDS, CTX_EXIT_CODE(R10)
	MOVQ UC_RIP(DX), AX
	MOVQ AX, CTX_GO_CALL_RETURN_ADDRESS(R10)
	MOVQ UC_RSP(DX), AX
	MOVQ AX, CTX_SP_BEFORE_GO_CALL(R10)
	MOVQ UC_RBP(DX), AX
	MOVQ AX, CTX_FP_BEFORE_GO_CALL(R10)

	// The exit sequence: RBP and RSP of the Go caller, then RET.
	MOVQ CTX_ORIGINAL_FP(R10), AX
	MOVQ AX, UC_RBP(DX)
	MOVQ CTX_ORIGINAL_SP(R10), AX
	MOVQ 0(AX), CX
	MOVQ CX, UC_RIP(DX)
	ADDQ $8, AX
	MOVQ AX, UC_RSP(DX)
	RET // to the restorer, which resumes there through rt_sigreturn

chain:
	MOVQ ·goHandler(SB), AX
	JMP  AX

// lookup finds, in the table whose first chunk is at R9, a complete entry
// whose range holds R8. Found: R11 = 1 and R10 = the entry's context.
// Otherwise R11 = 0. Clobbers AX, CX and R9.
TEXT lookup<>(SB), NOSPLIT|NOFRAME, $0
chunk:
	MOVQ $CHUNK_ENTRIES, CX

entry:
	MOVQ  ENTRY_SEQ(R9), AX
	TESTQ $1, AX
	JNZ   next
	MOVQ  ENTRY_HI(R9), R11
	TESTQ R11, R11
	JZ    next
	CMPQ  R8, R11
	JAE   next
	CMPQ  R8, ENTRY_LO(R9)
	JB    next
	MOVQ  ENTRY_CTX(R9), R10
	CMPQ  AX, ENTRY_SEQ(R9)
	JNE   next
	MOVQ  $1, R11
	RET

next:
	ADDQ $ENTRY_SIZE, R9
	DECQ CX
	JNZ  entry

	// R9 is now at the chunk's next pointer.
	MOVQ  0(R9), R9
	TESTQ R9, R9
	JNZ   chunk
	XORQ  R11, R11
	RET

// func sigtrampAddr() uintptr
TEXT ·sigtrampAddr(SB), NOSPLIT, $0-8
	LEAQ ·sigtramp(SB), AX
	MOVQ AX, ret+0(FP)
	RET
