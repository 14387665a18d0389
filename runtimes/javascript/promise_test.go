package javascript

import (
	"context"
	"testing"
)

// TestPromiseHandled proves promise.go's reading of the pinned build's
// memory layout: each promise state, with and without a handler, and a
// value that is no promise.
func TestPromiseHandled(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	in.run = context.Background()
	tests := []struct {
		code             string
		state            int32
		handled, unknown bool
	}{
		{code: "Promise.reject(1)", state: promiseRejected},
		{code: "const p1 = Promise.reject(1); p1.catch(() => {}); p1", state: promiseRejected, handled: true},
		{code: "const p2 = Promise.reject(1); p2.then(() => {}); p2", state: promiseRejected, handled: true},
		{code: "const p3 = Promise.reject(1); (async () => { try { await p3 } catch {} })(); p3", state: promiseRejected, handled: true},
		{code: "const p4 = Promise.reject(1); Promise.allSettled([p4]); p4", state: promiseRejected, handled: true},
		{code: "Promise.resolve(1)", state: promiseFulfilled},
		{code: "new Promise(() => {})", state: promisePending},
		{code: "const p5 = new Promise(() => {}); p5.finally(() => {}); p5", state: promisePending, handled: true},
		{code: "class P extends Promise {}; P.reject(1).catch(() => {})", state: promisePending},
	}
	for _, tt := range tests {
		v, exc := in.evalScript(tt.code, scriptName, 0)
		if exc != 0 {
			t.Fatalf("%s: %s", tt.code, in.cStringOf(exc))
		}
		state := in.promiseState(v)
		if state != tt.state {
			t.Fatalf("%s: state %d, want %d", tt.code, state, tt.state)
		}
		handled, known := in.promiseHandled(v, state)
		if handled != tt.handled || !known {
			t.Errorf("%s: handled %v (known %v), want %v", tt.code, handled, known, tt.handled)
		}
		// A state that does not match what the engine says is refused.
		if _, known := in.promiseHandled(v, state+1); known {
			t.Errorf("%s: a wrong state was accepted", tt.code)
		}
	}
	for _, code := range []string{"({then() {}})", "[1]", "42"} {
		v, _ := in.evalScript(code, scriptName, 0)
		if _, known := in.promiseHandled(v, promisePending); known {
			t.Errorf("%s: read as a promise", code)
		}
	}
}
