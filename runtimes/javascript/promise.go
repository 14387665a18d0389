package javascript

// Whether a rejected promise has a handler. QuickJS records it in the
// promise (JSPromiseData.is_handled, set by every then, catch, finally,
// await and Promise combinator), but no QTS_* export of the pinned build
// reports it, and JavaScript cannot observe it. So promiseHandled reads it
// from the guest's memory, with the layout of the pinned build: the module
// is hash-checked (fetch.sh), TestPromiseHandled proves the layout on it,
// and every read is checked against what the engine's own exports say
// (the value is an object of the promise class whose state
// QTS_PromiseState reports), so that a different layout answers "not
// known" instead of a wrong answer.
//
// Offsets for QuickJS-NG 0.12.1 on wasm32 (quickjs.c):
//   - JSValue is NaN-boxed into 8 bytes: the pointer in the low word, the
//     tag in the high word (JS_NAN_BOXING, as INTPTR_MAX < INT64_MAX);
//   - struct JSObject: the GC header (ref_count, two bytes of flags,
//     class_id as a uint16 at 6, the GC list link), then shape, prop and
//     first_weak_ref, then at 32 the union whose opaque points to the
//     class's data (the source's comment says 28, but the union holds
//     8-byte JSValues such as object_data, so it is 8-aligned);
//   - JSPromiseData: promise_state at 0, promise_reactions[2] (two list
//     heads of two pointers), then bool is_handled at 20.
const (
	jsTagObject         = 0xffffffff // JS_TAG_OBJECT, -1
	jsClassPromise      = 51         // JS_CLASS_PROMISE
	objectClassIDOffset = 6
	objectOpaqueOffset  = 32
	promiseStateOffset  = 0
	promiseHandledField = 20
)

// promiseHandled reports whether promise p (a JSValue*, a native promise
// in state state) has had a reaction attached, and whether that could be
// read at all.
func (in *instance) promiseHandled(p uint32, state int32) (handled, known bool) {
	mem := in.mem
	ptr, ok1 := mem.ReadUint32Le(p)
	tag, ok2 := mem.ReadUint32Le(p + 4)
	if !ok1 || !ok2 || tag != jsTagObject {
		return false, false
	}
	classID, ok1 := mem.ReadUint16Le(ptr + objectClassIDOffset)
	data, ok2 := mem.ReadUint32Le(ptr + objectOpaqueOffset)
	if !ok1 || !ok2 || classID != jsClassPromise || data == 0 {
		return false, false
	}
	gotState, ok1 := mem.ReadUint32Le(data + promiseStateOffset)
	flag, ok2 := mem.ReadByte(data + promiseHandledField)
	if !ok1 || !ok2 || int32(gotState) != state || flag > 1 {
		return false, false
	}
	return flag == 1, true
}
