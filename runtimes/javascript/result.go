package javascript

import (
	"encoding/json"

	"capsule/runtimes"
)

// The result of a run is the value the code left as its last expression
// (its completion value). lastValue waits for it only when it is a native
// promise (QTS_PromiseState says so; no property of it is read, so no
// `then` getter or Proxy trap runs), and never for any other thenable,
// which is a value like any other. How the value is rendered is prelude.js's
// render; README.md and the tool description say the same.

// renderedValue is what the prelude's render functions return: the
// value's type name, its inspect form, and its JSON where JSON holds it
// exactly.
type renderedValue struct {
	Type string          `json:"type"`
	Repr string          `json:"repr"`
	JSON json.RawMessage `json:"json"`
}

// lastValue settles v (a JSValue*) and renders it (renderedValue as JSON
// text), "" for no result:
//   - not a promise: v itself;
//   - a promise that fulfils: its value;
//   - a promise that rejects with no handler attached: the run's error,
//     as an await of it would be;
//   - a promise that rejects but that the code handled (a then, catch,
//     finally or await is attached to it): no error, the promise itself,
//     "Promise { <rejected> ... }", since the code dealt with the rejection;
//   - a promise that nothing can settle any more (no job or timer is left):
//     no error, "Promise { <pending> }": the code did not await it, so a
//     promise that stays pending is a value, not a failure of the run.
//
// The deadline passing while it waits is left to Run's outcome.
func (in *instance) lastValue(v uint32) (string, *runtimes.ErrorInfo) {
	if in.promiseState(v) == promiseNone {
		return in.render(in.methods.Render, v)
	}
	exc, stopped := in.loop(v)
	switch {
	case stopped:
		return "", nil
	case exc != 0:
		return "", in.describe(exc)
	}
	state := in.promiseState(v)
	stateValue := in.newFloat64(float64(state))
	defer in.freeValue(stateValue)
	switch state {
	case promiseFulfilled:
		return in.render(in.methods.Render, in.call(in.fn.promiseResult, in.jsctx, v))
	case promiseRejected:
		reason := in.call(in.fn.promiseResult, in.jsctx, v)
		if handled, _ := in.promiseHandled(v, state); !handled {
			return "", in.describe(reason)
		}
		return in.render(in.methods.RenderPromise, stateValue, reason)
	default:
		return in.render(in.methods.RenderPromise, stateValue)
	}
}

// render calls one of the prelude's render functions, which return JSON
// text and catch whatever user code they reach throws: only the deadline or
// the memory limit can make them fail.
func (in *instance) render(method uint32, args ...uint32) (string, *runtimes.ErrorInfo) {
	rendered, exc := in.callJS(method, in.prelude, args...)
	if exc != 0 {
		return "", in.describe(exc)
	}
	defer in.freeValue(rendered)
	return in.stringOf(rendered), nil
}
