package worker

import (
	"sync"
	"time"
	"unicode/utf8"

	"capsule/ipc"
)

const (
	// flushSize is how much output is gathered before it goes to the
	// supervisor; one frame per print would cost a system call each.
	flushSize = 32 << 10
	// flushEvery bounds how stale the supervisor's copy of the output can
	// be, so that what was printed before a crash or kill is not lost.
	flushEvery = 50 * time.Millisecond
)

// stream captures one of the guest's output streams: it keeps the first max
// bytes, counts the rest, and forwards what it keeps to the supervisor in
// frames. Writes never fail, so a flood cannot break the guest's own
// error handling; it only stops being recorded.
type stream struct {
	mu        sync.Mutex
	out       *ipc.Writer
	typ       ipc.Type
	buf       []byte
	remaining int64
	dropped   int64
	lastFlush time.Time
	pending   *time.Timer // flushes what a quiet guest left buffered
	err       error       // first error sending to the supervisor
}

func newStream(out *ipc.Writer, typ ipc.Type, max int64) *stream {
	return &stream{out: out, typ: typ, remaining: max, lastFlush: time.Now()}
}

// Write implements io.Writer.
func (s *stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := int64(len(p))
	if keep > s.remaining {
		keep = s.remaining
		// Cut at a character boundary so the kept text stays valid UTF-8.
		for keep > 0 && !utf8.RuneStart(p[keep]) {
			keep--
		}
	}
	s.buf = append(s.buf, p[:keep]...)
	s.remaining -= keep
	if keep < int64(len(p)) {
		s.dropped += int64(len(p)) - keep
		s.remaining = 0 // a cut character is dropped, and so is all after it
	}
	if len(s.buf) >= flushSize || time.Since(s.lastFlush) >= flushEvery {
		s.flushLocked()
	} else if len(s.buf) > 0 && s.pending == nil {
		// Output followed by silence (a sleep, a long computation) must
		// still reach the supervisor before a possible kill.
		s.pending = time.AfterFunc(flushEvery, func() { _ = s.flush() })
	}
	return len(p), nil
}

// flush sends what is buffered.
func (s *stream) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked()
	return s.err
}

func (s *stream) flushLocked() {
	if s.pending != nil {
		s.pending.Stop()
		s.pending = nil
	}
	s.lastFlush = time.Now()
	for len(s.buf) > 0 && s.err == nil {
		n := min(len(s.buf), flushSize)
		s.err = s.out.WriteFrame(s.typ, s.buf[:n])
		s.buf = s.buf[n:]
	}
	s.buf = s.buf[:0]
}

// droppedBytes reports how many bytes were dropped beyond the cap.
func (s *stream) droppedBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
