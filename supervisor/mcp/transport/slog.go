package transport

import (
	"context"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// slogHandler sends mcp-go's transport logs to our logger, so they share
// its format and level. mcp-go logs routine events at Info (a refused GET,
// say), which are debug detail for us.
type slogHandler struct {
	log    hclog.Logger
	attrs  []any
	prefix string
}

func (h slogHandler) level(l slog.Level) hclog.Level {
	switch {
	case l >= slog.LevelError:
		return hclog.Error
	case l >= slog.LevelWarn:
		return hclog.Warn
	}
	return hclog.Debug
}

// Enabled implements slog.Handler.
func (h slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.log.GetLevel() <= h.level(l)
}

// Handle implements slog.Handler.
func (h slogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any(nil), h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.prefix+a.Key, a.Value.Resolve().Any())
		return true
	})
	h.log.Log(h.level(r.Level), r.Message, args...)
	return nil
}

// WithAttrs implements slog.Handler.
func (h slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = append([]any(nil), h.attrs...)
	for _, a := range attrs {
		h.attrs = append(h.attrs, h.prefix+a.Key, a.Value.Resolve().Any())
	}
	return h
}

// WithGroup implements slog.Handler.
func (h slogHandler) WithGroup(name string) slog.Handler {
	if name != "" {
		h.prefix += name + "."
	}
	return h
}
