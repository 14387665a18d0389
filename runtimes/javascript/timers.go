package javascript

import (
	"container/heap"
	"time"
)

// maxPendingTimers bounds the timers a run may have armed at once. The
// callbacks live in the guest, whose memory the limit caps, but every armed
// timer also costs a heap entry here, in the worker's Go memory, which it
// does not; so prelude.js refuses the timer beyond this one with a
// RangeError that names the bound (and the README states it). A timer stops
// counting when it fires (unless it repeats) or is cleared.
const maxPendingTimers = 100_000

// timerQueue holds the due times of the guest's armed timers; their
// callbacks stay in the guest (prelude.js). Every armed timer has exactly one
// entry, found through byID: clearing or firing a timer removes its entry at
// once, so the queue never holds more than the armed timers.
type timerQueue struct {
	entries timerHeap
	byID    map[float64]*timerEntry
	seq     uint64
}

type timerEntry struct {
	due   time.Time
	seq   uint64 // arming order, for timers due at the same moment
	id    float64
	index int // position in entries
}

// schedule arms timer id for due, re-arming it if it is armed already (an
// interval that fires re-arms itself).
func (q *timerQueue) schedule(id float64, due time.Time) {
	if q.byID == nil {
		q.byID = map[float64]*timerEntry{}
	}
	q.seq++
	if t, ok := q.byID[id]; ok {
		t.due, t.seq = due, q.seq
		heap.Fix(&q.entries, t.index)
		return
	}
	t := &timerEntry{due: due, seq: q.seq, id: id}
	q.byID[id] = t
	heap.Push(&q.entries, t)
}

// cancel disarms timer id; an id that is not armed is ignored.
func (q *timerQueue) cancel(id float64) {
	if t, ok := q.byID[id]; ok {
		heap.Remove(&q.entries, t.index)
		delete(q.byID, id)
	}
}

// pending is the number of armed timers.
func (q *timerQueue) pending() int { return len(q.entries) }

// next returns the earliest armed timer without removing it.
func (q *timerQueue) next() (timerEntry, bool) {
	if len(q.entries) == 0 {
		return timerEntry{}, false
	}
	return *q.entries[0], true
}

// take disarms t, which next returned, as it fires.
func (q *timerQueue) take(t timerEntry) {
	q.cancel(t.id)
}

// timerHeap orders by due time, then by arming order, so that timers due at
// the same moment fire in the order they were set, as in node.
type timerHeap []*timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timerEntry)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return t
}
