package toolcall

import (
	"encoding/binary"
	"math/bits"
)

// Eight copies of a byte, for looking at eight bytes at once.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special returns the index of the first byte of b that cannot stand for
// itself in a JSON string ('"', '\\' or a control character), or len(b).
// It looks at eight bytes at a time: JSON strings are mostly plain runs,
// and a file passed in or returned is megabytes of them.
func special(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte of m has its high bit set where x's byte is below 0x20,
		// or is '"' or '\\' (each found as a zero byte of x XOR it); a
		// borrow can only mark bytes above the first real one, and only
		// the first is used.
		q := x ^ (ones * '"')
		s := x ^ (ones * '\\')
		m := ((x - ones*0x20) | (q - ones) | (s - ones)) &^ x & highs
		if m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if !plain[b[i]] {
			return i
		}
	}
	return len(b)
}
