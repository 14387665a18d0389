package mcplog

import (
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestLevel(t *testing.T) {
	for _, c := range []struct {
		in   hclog.Level
		want mcp.LoggingLevel
	}{
		{hclog.Trace, mcp.LoggingLevelDebug},
		{hclog.Debug, mcp.LoggingLevelDebug},
		{hclog.Info, mcp.LoggingLevelInfo},
		{hclog.Warn, mcp.LoggingLevelWarning},
		{hclog.Error, mcp.LoggingLevelError},
	} {
		if got := Level(c.in); got != c.want {
			t.Errorf("Level(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestData(t *testing.T) {
	for _, c := range []struct {
		name string
		args []any
		want map[string]any
	}{
		{"no fields", nil, map[string]any{"message": "m"}},
		{"fields", []any{"id", 3, "language", "python"}, map[string]any{"message": "m", "id": 3, "language": "python"}},
		{"an error as its text", []any{"error", errors.New("boom")}, map[string]any{"message": "m", "error": "boom"}},
		{"a field named message keeps the line's", []any{"message", "x"}, map[string]any{"message": "m", "field_message": "x"}},
		{"an odd field is left out", []any{"id", 3, "dangling"}, map[string]any{"message": "m", "id": 3}},
	} {
		if got := data("m", c.args); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: data = %v, want %v", c.name, got, c.want)
		}
	}
}
