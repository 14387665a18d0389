package ipc

import (
	"bytes"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the frame reader and the strict Done
// decoder, as a hostile worker would. Neither may panic, and no frame may be
// returned larger than the maximum.
func FuzzReader(f *testing.F) {
	f.Add(frame(TypeDone, `{"result":2,"exit_code":0,"stdout_dropped":0,"stderr_dropped":0}`))
	f.Add(append(frame(TypeStdout, "hello\n"), frame(TypeDone, `{"exit_code":0}`)...))
	f.Add(frame(TypeReady, `{"protocol":1}`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'O'})
	const max = 1 << 10
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), max)
		for {
			fr, err := r.Next()
			if err != nil {
				return
			}
			if len(fr.Payload) > max {
				t.Fatalf("frame of %d bytes passed a %d-byte maximum", len(fr.Payload), max)
			}
			switch fr.Type {
			case TypeDone:
				var d Done
				if DecodeJSON(fr, &d) == nil {
					_ = d.Validate()
				}
			case TypeReady:
				var rd Ready
				_ = DecodeJSON(fr, &rd)
			case TypeFailure:
				var fl Failure
				_ = DecodeJSON(fr, &fl)
			}
		}
	})
}
