package supervisor

import (
	"errors"
	"strings"
	"testing"
)

// TestValidateMaxAnswer: an answer limit too small for an answer's text
// is refused at start, naming the flag and the least it may be.
func TestValidateMaxAnswer(t *testing.T) {
	cfg := DefaultConfig(nil)
	cfg.Limits.MaxAnswer = 1 << 10
	err := cfg.Validate()
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "max-answer 1KiB is too small") || !strings.Contains(err.Error(), "64KiB") {
		t.Errorf("validate: %v", err)
	}
	cfg.Limits.MaxAnswer = MinAnswer
	if err := cfg.Validate(); err != nil {
		t.Errorf("validate at the least: %v", err)
	}
}
