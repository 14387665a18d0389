package javascript

import (
	"context"
	"fmt"
	"testing"
	"time"

	"capsule/runtimes"
)

func TestTimerQueue(t *testing.T) {
	var q timerQueue
	base := time.Now()
	q.schedule(1, base.Add(30*time.Millisecond))
	q.schedule(2, base.Add(10*time.Millisecond))
	q.schedule(3, base.Add(10*time.Millisecond))
	q.schedule(4, base.Add(5*time.Millisecond))
	q.cancel(4)
	q.cancel(99)                                 // never armed: ignored
	q.schedule(1, base.Add(20*time.Millisecond)) // re-armed: moves, keeps one entry
	if q.pending() != 3 {
		t.Errorf("pending = %d, want 3", q.pending())
	}
	var order []float64
	for {
		tm, ok := q.next()
		if !ok {
			break
		}
		q.take(tm)
		order = append(order, tm.id)
	}
	if want := []float64{2, 3, 1}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("fired %v, want %v", order, want)
	}
	if q.pending() != 0 || len(q.byID) != 0 {
		t.Errorf("after firing all: %d entries, %d ids", q.pending(), len(q.byID))
	}
}

// TestClearedTimersFreeHostMemory is the issue-10 bomb, bounded: a timer
// set and cleared at once must leave nothing behind on the host, however
// far off it was due.
func TestClearedTimersFreeHostMemory(t *testing.T) {
	in, _, _ := testInstance(t, testEngine(t))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := in.Run(ctx, runtimes.Request{Code: "let n = 0; for (; n < 200000; n++) clearTimeout(setTimeout(() => {}, 1e9)); n"})
	if string(o.Result) != "200000" || o.Error != nil {
		t.Fatalf("outcome %+v (error %+v)", o, o.Error)
	}
	if q := &in.timers; q.pending() != 0 || cap(q.entries) > 16 {
		t.Errorf("after clearing every timer: %d pending, room for %d entries", q.pending(), cap(q.entries))
	}
}

// TestPendingTimerBound: the timer beyond maxPendingTimers is refused with
// a RangeError that says so, the ones before it work, and clearing makes
// room again.
func TestPendingTimerBound(t *testing.T) {
	runCases(t, []runCase{
		{name: "bound", timeout: 30 * time.Second, code: `const ids = [];
let err;
try { for (;;) ids.push(setTimeout(() => {}, 1e9)); } catch (e) { err = e; }
const full = ids.length;
clearTimeout(ids.pop());
const again = setTimeout(() => console.log('fired'), 1);
for (const id of ids) clearTimeout(id);
[full, err.name, err.message]`,
			stdout: "fired\n",
			result: fmt.Sprintf(`[%d,"RangeError","too many pending timers: capsule allows %d at once; `+
				`clear timers (clearTimeout, clearInterval) or let them fire before setting more"]`, maxPendingTimers, maxPendingTimers)},
		{name: "intervals count once", code: `let n = 0; const id = setInterval(() => { if (++n === 50) clearInterval(id) }, 1); await new Promise(r => setTimeout(r, 200)); n`,
			result: "50"},
	})
}
