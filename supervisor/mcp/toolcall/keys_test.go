package toolcall

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// jsonNames adds the JSON names of t's fields (embedded structs' too) to
// out, as encoding/json names them.
func jsonNames(t reflect.Type, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "":
			jsonNames(f.Type, out)
		case f.IsExported():
			if name == "" {
				name = f.Name
			}
			out[name] = true
		}
	}
}

// TestParamsNamesCoverMCPGo: every name mcp-go decodes from the params of
// the requests and notifications it serves is one Split knows, so that a
// key differing from it only by case is refused (after an mcp-go upgrade
// adds one, this fails until paramsNames has it); and the envelope's too.
func TestParamsNamesCoverMCPGo(t *testing.T) {
	params := map[string]bool{}
	for _, v := range []any{
		mcp.InitializeRequest{}, mcp.PingRequest{}, mcp.DiscoverRequest{}, mcp.SubscriptionsListenRequest{},
		mcp.SetLevelRequest{}, mcp.ListResourcesRequest{}, mcp.ListResourceTemplatesRequest{}, mcp.ReadResourceRequest{},
		mcp.SubscribeRequest{}, mcp.UnsubscribeRequest{}, mcp.ListPromptsRequest{}, mcp.GetPromptRequest{},
		mcp.ListToolsRequest{}, mcp.CallToolRequest{}, mcp.GetTaskRequest{}, mcp.ListTasksRequest{},
		mcp.TaskResultRequest{}, mcp.CancelTaskRequest{}, mcp.CompleteRequest{}, mcp.JSONRPCNotification{},
		mcp.CancelledNotification{}, mcp.ProgressNotification{}, mcp.InitializedNotification{},
	} {
		f, ok := reflect.TypeOf(v).FieldByName("Params")
		if !ok {
			t.Fatalf("%T has no Params", v)
		}
		jsonNames(f.Type, params)
	}
	for name := range params {
		if !slices.Contains(paramsNames, name) {
			t.Errorf("mcp-go decodes params.%s, which paramsNames lacks", name)
		}
	}
	envelope := map[string]bool{}
	for _, v := range []any{mcp.JSONRPCRequest{}, mcp.JSONRPCNotification{}, mcp.JSONRPCResponse{}, mcp.JSONRPCError{}} {
		jsonNames(reflect.TypeOf(v), envelope)
	}
	for name := range envelope {
		if !slices.Contains(envelopeNames, name) {
			t.Errorf("mcp-go decodes %s in the envelope, which envelopeNames lacks", name)
		}
	}
}
