#include "textflag.h"

// Offsets into vforkProgram and vforkStep (vfork_linux_amd64.go), checked
// by TestVforkLayout.
#define P_CLONEFLAGS 0
#define P_STEPS 8
#define P_NSTEPS 16
#define P_BLOCKALL 24
#define P_OLDMASK 32
#define P_FAILEDSTEP 40
#define P_ERRNO 48
#define P_SIGSCRATCH 56
#define P_SIGDEFAULT 88
#define P_GOAHEAD 120
#define P_EXECDONE 124
#define S_OP 0
#define S_TRAP 8
#define S_ARG0 16
#define S_ARG1 24
#define S_ARG2 32
#define S_ARG3 40
#define S_ARG4 48
#define S_ARG5 56
#define S_MAYFAIL 64
#define S_SIZE 72

#define SYS_write 1
#define SYS_close 3
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_clone 56
#define SYS_futex 202
#define SYS_exit_group 231
#define SYS_openat 257
#define SIG_SETMASK 2
#define AT_FDCWD -100
#define O_WRONLY_CLOEXEC 0x80001
#define EINVAL 22
#define ETIMEDOUT 110
#define EIO 5
#define EXIT_FAILED 127

// func vforkExec(p *vforkProgram) (pid uintptr, errno uintptr)
//
// No Go code runs between blocking the signals and restoring them, so the
// goroutine cannot move to another thread in between. The child uses no
// stack at all: it shares the parent's, and the parent's frame is live
// (with CLONE_VFORK) or in use by the parent running beside it (without).
TEXT ·vforkExec(SB),NOSPLIT,$0-24
	MOVQ	p+0(FP), R12

	MOVQ	$SYS_rt_sigprocmask, AX
	MOVQ	$SIG_SETMASK, DI
	LEAQ	P_BLOCKALL(R12), SI
	LEAQ	P_OLDMASK(R12), DX
	MOVQ	$8, R10
	SYSCALL

	MOVQ	$SYS_clone, AX
	MOVQ	P_CLONEFLAGS(R12), DI
	XORQ	SI, SI			// the same stack: the parent is suspended
	XORQ	DX, DX
	LEAQ	P_EXECDONE(R12), R10	// used with CLONE_CHILD_CLEARTID only
	XORQ	R8, R8
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	MOVQ	AX, R13

	MOVQ	$SYS_rt_sigprocmask, AX
	MOVQ	$SIG_SETMASK, DI
	LEAQ	P_OLDMASK(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	SYSCALL

	CMPQ	R13, $0xfffffffffffff001
	JCC	cloneFailed		// unsigned R13 >= -4095: an errno
	MOVQ	R13, pid+8(FP)
	MOVQ	$0, errno+16(FP)
	RET
cloneFailed:
	NEGQ	R13
	MOVQ	$0, pid+8(FP)
	MOVQ	R13, errno+16(FP)
	RET

	// The child. R12 = program, R13 = steps, BX = step index,
	// R14 = current step. Only AX, CX, R11 are changed by the kernel.
child:
	MOVQ	P_STEPS(R12), R13
	XORQ	BX, BX
next:
	CMPQ	BX, P_NSTEPS(R12)
	JCC	ranOut
	MOVQ	BX, AX
	IMULQ	$S_SIZE, AX
	LEAQ	(R13)(AX*1), R14
	MOVQ	S_OP(R14), AX
	CMPQ	AX, $1
	JEQ	opSyscall
	CMPQ	AX, $2
	JEQ	opWriteFile
	CMPQ	AX, $3
	JEQ	opSigReset
	CMPQ	AX, $4
	JEQ	opWaitGo
	MOVQ	$EINVAL, AX
	JMP	fail

opSyscall:
	MOVQ	S_TRAP(R14), AX
	MOVQ	S_ARG0(R14), DI
	MOVQ	S_ARG1(R14), SI
	MOVQ	S_ARG2(R14), DX
	MOVQ	S_ARG3(R14), R10
	MOVQ	S_ARG4(R14), R8
	MOVQ	S_ARG5(R14), R9
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JCS	done			// unsigned AX < -4095: success
	CMPQ	S_MAYFAIL(R14), $0
	JNE	done
	NEGQ	AX
	JMP	fail

opWriteFile:
	MOVQ	$SYS_openat, AX
	MOVQ	$AT_FDCWD, DI
	MOVQ	S_ARG0(R14), SI
	MOVQ	$O_WRONLY_CLOEXEC, DX
	XORQ	R10, R10
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JCC	failNeg
	MOVQ	AX, R8			// the fd
	MOVQ	$SYS_write, AX
	MOVQ	R8, DI
	MOVQ	S_ARG1(R14), SI
	MOVQ	S_ARG2(R14), DX
	SYSCALL
	CMPQ	AX, $0xfffffffffffff001
	JCC	failNeg
	CMPQ	AX, S_ARG2(R14)
	JNE	shortWrite
	MOVQ	$SYS_close, AX
	MOVQ	R8, DI
	SYSCALL
	JMP	done
shortWrite:
	MOVQ	$EIO, AX
	JMP	fail

opSigReset:
	MOVQ	$1, R8			// signal number
sigNext:
	CMPQ	R8, $65
	JCC	done
	MOVQ	$SYS_rt_sigaction, AX
	MOVQ	R8, DI
	XORQ	SI, SI
	LEAQ	P_SIGSCRATCH(R12), DX
	MOVQ	$8, R10
	SYSCALL
	CMPQ	AX, $0
	JNE	sigSkip
	MOVQ	P_SIGSCRATCH(R12), AX
	CMPQ	AX, $1
	JLS	sigSkip			// SIG_DFL (0) or SIG_IGN (1): keep
	MOVQ	$SYS_rt_sigaction, AX
	MOVQ	R8, DI
	LEAQ	P_SIGDEFAULT(R12), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	SYSCALL
sigSkip:
	INCQ	R8
	JMP	sigNext

opWaitGo:
	MOVQ	S_ARG0(R14), DI
	MOVL	(DI), AX
	CMPL	AX, $0
	JNE	done
	MOVQ	$SYS_futex, AX
	XORQ	SI, SI			// FUTEX_WAIT, shared
	XORQ	DX, DX			// while the word is 0
	MOVQ	S_ARG1(R14), R10	// for at most this long (a timespec)
	SYSCALL
	CMPQ	AX, $-ETIMEDOUT
	JNE	opWaitGo
	MOVQ	$ETIMEDOUT, AX		// the parent never said go: give up
	JMP	fail

done:
	INCQ	BX
	JMP	next

ranOut:
	MOVQ	$EINVAL, AX
	JMP	fail
failNeg:
	NEGQ	AX
fail:
	MOVQ	AX, P_ERRNO(R12)
	MOVQ	BX, P_FAILEDSTEP(R12)
	MOVQ	$SYS_exit_group, AX
	MOVQ	$EXIT_FAILED, DI
	SYSCALL
	JMP	fail
