package lockdown

// guestWasm is a handwritten wasm module, so the test needs no toolchain:
//
//	(module
//	  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
//	  (import "wasi_snapshot_preview1" "random_get" (func $random_get (param i32 i32) (result i32)))
//	  (memory (export "memory") 1)
//	  (data (i32.const 0) "\64\00\00\00\03\00\00\00")   ;; iovec {100, 3}
//	  (data (i32.const 100) "ok\n")
//	  (func (export "run") (param $n i32) (result i32) (local $i i32) (local $acc i32)
//	    (block (loop
//	      (br_if 1 (i32.ge_u (local.get $i) (local.get $n)))
//	      (local.set $acc (i32.mul (i32.add (local.get $acc) (local.get $i)) (i32.const 31)))
//	      (local.set $i (i32.add (local.get $i) (i32.const 1)))
//	      (br 0)))
//	    (drop (call $random_get (i32.const 200) (i32.const 16)))
//	    (drop (call $fd_write (i32.const 1) (i32.const 0) (i32.const 1) (i32.const 8)))
//	    (local.get $acc)))
//
// run(n) loops n times, draws 16 random bytes (getrandom) and writes "ok\n"
// to stdout (a pipe: fcntl, fstat, write).
var guestWasm = wasmModule(
	wasmSection(1, wasmVec( // types
		[]byte{0x60, 4, 0x7f, 0x7f, 0x7f, 0x7f, 1, 0x7f},
		[]byte{0x60, 2, 0x7f, 0x7f, 1, 0x7f},
		[]byte{0x60, 1, 0x7f, 1, 0x7f},
	)),
	wasmSection(2, wasmVec( // imports
		wasmConcat(wasmName("wasi_snapshot_preview1"), wasmName("fd_write"), []byte{0x00, 0}),
		wasmConcat(wasmName("wasi_snapshot_preview1"), wasmName("random_get"), []byte{0x00, 1}),
	)),
	wasmSection(3, wasmVec([]byte{2})),       // functions: run has type 2
	wasmSection(5, wasmVec([]byte{0x00, 1})), // memory: min 1 page
	wasmSection(7, wasmVec( // exports
		wasmConcat(wasmName("run"), []byte{0x00, 2}),
		wasmConcat(wasmName("memory"), []byte{0x02, 0}),
	)),
	wasmSection(10, wasmVec(wasmSized(wasmConcat( // code
		[]byte{1, 2, 0x7f}, // locals: 2 x i32
		[]byte{
			0x02, 0x40, // block
			0x03, 0x40, // loop
			0x20, 1, 0x20, 0, 0x4f, 0x0d, 1, // br_if 1 (i >= n)
			0x20, 2, 0x20, 1, 0x6a, 0x41, 31, 0x6c, 0x21, 2, // acc = (acc+i)*31
			0x20, 1, 0x41, 1, 0x6a, 0x21, 1, // i++
			0x0c, 0, // br 0
			0x0b, 0x0b, // end loop, end block
			0x41, 0xc8, 0x01, 0x41, 16, 0x10, 1, 0x1a, // drop(random_get(200, 16))
			0x41, 1, 0x41, 0, 0x41, 1, 0x41, 8, 0x10, 0, 0x1a, // drop(fd_write(1, 0, 1, 8))
			0x20, 2, // acc
			0x0b,
		},
	)))),
	wasmSection(11, wasmVec( // data
		wasmConcat([]byte{0x00, 0x41, 0, 0x0b}, wasmVec([]byte{100}, []byte{0}, []byte{0}, []byte{0}, []byte{3}, []byte{0}, []byte{0}, []byte{0})),
		wasmConcat([]byte{0x00, 0x41, 0xe4, 0x00, 0x0b}, wasmName("ok\n")),
	)),
)

func wasmModule(sections ...[]byte) []byte {
	return wasmConcat(append([][]byte{{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}}, sections...)...)
}

func wasmConcat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// wasmLEB is unsigned LEB128.
func wasmLEB(v int) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func wasmSized(b []byte) []byte            { return wasmConcat(wasmLEB(len(b)), b) }
func wasmName(s string) []byte             { return wasmSized([]byte(s)) }
func wasmSection(id byte, b []byte) []byte { return wasmConcat([]byte{id}, wasmSized(b)) }

func wasmVec(items ...[]byte) []byte {
	return wasmConcat(wasmLEB(len(items)), wasmConcat(items...))
}
