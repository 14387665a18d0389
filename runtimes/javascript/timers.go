package javascript

import (
	"container/heap"
	"time"
)

// timerQueue holds the due times of the guest's timers; their callbacks stay
// in the guest (prelude.js). Cancelled and re-armed timers leave stale heap
// entries behind, recognised by their sequence number.
type timerQueue struct {
	entries timerHeap
	live    map[float64]uint64 // timer id -> sequence number of its entry
	seq     uint64
}

type timerEntry struct {
	due time.Time
	seq uint64
	id  float64
}

func (q *timerQueue) schedule(id float64, due time.Time) {
	if q.live == nil {
		q.live = map[float64]uint64{}
	}
	q.seq++
	q.live[id] = q.seq
	heap.Push(&q.entries, timerEntry{due: due, seq: q.seq, id: id})
}

func (q *timerQueue) cancel(id float64) {
	delete(q.live, id)
}

// next returns the earliest live timer without removing it.
func (q *timerQueue) next() (timerEntry, bool) {
	for len(q.entries) > 0 {
		t := q.entries[0]
		if seq, ok := q.live[t.id]; ok && seq == t.seq {
			return t, true
		}
		heap.Pop(&q.entries)
	}
	return timerEntry{}, false
}

// take removes t, which next returned, as it fires.
func (q *timerQueue) take(t timerEntry) {
	heap.Pop(&q.entries)
	if q.live[t.id] == t.seq {
		delete(q.live, t.id)
	}
}

// timerHeap orders by due time, then by arming order, so that timers due at
// the same moment fire in the order they were set, as in node.
type timerHeap []timerEntry

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
