// Package mcp is capsule's MCP edge: the tools execute_python and
// execute_javascript (their descriptions, input and output schemas, the
// server's identity), their arguments, and the answer as an MCP tool
// result within --max-answer, with the returned files as content. The
// transports (package transport), the tools/call fast path (package
// toolcall) and the log sent to clients (package mcplog) are under it.
//
// The engine, package supervisor, knows nothing of MCP: it takes a
// supervisor.Request and returns a supervisor.Answer.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor"
	"capsule/supervisor/mcp/toolcall"
)

// outputSchema describes Answer, the structuredContent of both tools.
// It is written for every client, not only for a full JSON Schema
// validator: each schema has one "type" string, a value that may be null
// is an anyOf of single-type branches (several clients read "type" as a
// string and reject or misread an array there), and the result, which may
// be any JSON value, lists the six JSON types rather than leaving "type"
// out. TestOutputSchemaIsPortable holds it to that.
const outputSchema = `{
  "type": "object",
  "properties": {
    "stdout": {"type": "string", "description": "What the code printed to standard output (up to the output limit)."},
    "stderr": {"type": "string", "description": "What the code printed to standard error (up to the output limit)."},
    "result": {"anyOf": [{"type": "object"}, {"type": "array"}, {"type": "string"}, {"type": "number"}, {"type": "boolean"}, {"type": "null"}], "description": "The value of the last top-level expression as JSON, where JSON holds it exactly: Python dict (str keys), list, tuple (as an array), str, int, finite float, bool, None; JavaScript plain objects and arrays of strings, finite numbers, booleans and null. An integer beyond ±2^53 (Python int, JavaScript BigInt) is a string of its decimal digits, so that no reader loses digits. Null when the value has no exact JSON form (see result_repr) or there is no last expression (result_type is null)."},
    "result_type": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "The value's type as the language names it: Python's type name (int, str, tuple, set, Decimal, datetime, NoneType, a class), JavaScript's constructor name (Object, Array, Map, Date, Uint8Array, a class) or Number, String, Boolean, BigInt, Symbol, null, undefined. Null when there is no last expression."},
    "result_repr": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "The value as the language's REPL shows it: Python's repr(), node's util.inspect. Null when there is no last expression."},
    "error": {
      "anyOf": [
        {
          "type": "object",
          "properties": {
            "type": {"type": "string"},
            "message": {"type": "string"},
            "traceback": {"type": "string"}
          },
          "required": ["type", "message", "traceback"]
        },
        {"type": "null"}
      ],
      "description": "Null, or the uncaught exception / syntax error / limit / refused arguments (type ArgumentError: nothing ran)."
    },
    "limit": {"anyOf": [{"type": "string", "enum": [` + limitNames + `]}, {"type": "null"}], "description": "The limit that was hit, if any; answer: the whole answer would have been over the server's size limit for an answer, so output was cut or files were not sent; shutdown: the server shut down and the call outlived its grace period."},
    "duration_ms": {"type": "number", "description": "Wall-clock time of the call in milliseconds."},
    "stdout_truncated": {"type": "boolean"},
    "stderr_truncated": {"type": "boolean"},
    "files": {` + filesSchema + `}
  },
  "required": ["stdout", "stderr", "result", "result_type", "result_repr", "error", "limit", "duration_ms", "stdout_truncated", "stderr_truncated"]
}`

// limitNames are the values of an answer's limit, as the output schema's
// enum lists them.
const limitNames = `"timeout", "memory", "output", "code_size", "scratch", "files_in", "files_out", "answer", "shutdown"`

// tools serves capsule's tools on a supervisor.
type tools struct {
	sup *supervisor.Supervisor
	cfg supervisor.Config
	// bundled and pythonPackages are what Python calls import beyond the
	// standard library, for the tool description.
	bundled        []string
	pythonPackages []string
}

// NewServer returns the MCP server with capsule's tools, backed by sup;
// extra adds what a transport offers (stdio: logging).
func NewServer(sup *supervisor.Supervisor, extra ...server.ServerOption) *server.MCPServer {
	s := &tools{sup: sup, cfg: sup.Config()}
	s.bundled, s.pythonPackages = sup.PythonPackages()
	opts := append([]server.ServerOption{server.WithToolCapabilities(false), server.WithRecovery()}, s.identity()...)
	srv := server.NewMCPServer("capsule", supervisor.Version, append(opts, extra...)...)
	for _, l := range s.cfg.Languages {
		srv.AddTool(s.tool(l), s.handler(l.Name))
	}
	return srv
}

func (s *tools) tool(l runtimes.Language) mcpgo.Tool {
	lim := s.cfg.Limits
	desc := fmt.Sprintf("%s %s, and nothing is kept between calls: "+
		"pass earlier results in the code or in `inputs`. Limits per call: %s wall time by default "+
		"(timeout_seconds may raise it up to %s), %s memory, %s each of stdout and stderr (the rest is "+
		"dropped), %d characters of code and %s of inputs. %s",
		l.Tool.About, s.files(l), lim.Timeout, lim.MaxTimeout, lim.Memory, lim.MaxOutput, int64(lim.MaxCode), lim.MaxCode, s.filesAbout(l))
	return mcpgo.NewTool(l.Tool.Name,
		mcpgo.WithDescription(desc),
		mcpgo.WithToolTitle(l.Tool.Title),
		mcpgo.WithToolIcons(icon(l.Tool.Colours[0], l.Tool.Colours[1])),
		mcpgo.WithTitleAnnotation(l.Tool.Title),
		// Nothing outside the sandbox changes, and nothing is reachable.
		mcpgo.WithReadOnlyHintAnnotation(true),
		mcpgo.WithDestructiveHintAnnotation(false),
		// Code may read the clock or random numbers.
		mcpgo.WithIdempotentHintAnnotation(false),
		mcpgo.WithOpenWorldHintAnnotation(false),
		// The schema states exactly what ParseArguments, the handler and
		// Execute enforce: the code's length in characters, as maxLength
		// counts them, and timeout_seconds within its bounds, more being
		// refused rather than cut.
		mcpgo.WithString("code", mcpgo.Required(), mcpgo.MaxLength(int(lim.MaxCode)),
			mcpgo.Description(fmt.Sprintf("The source code to run (at most %d characters).", int64(lim.MaxCode)))),
		mcpgo.WithNumber("timeout_seconds", mcpgo.Min(MinTimeout.Seconds()), mcpgo.Max(lim.MaxTimeout.Seconds()),
			mcpgo.Description(fmt.Sprintf("Wall-clock limit for this call in seconds (default %g, at least %g, at most %g; a call that asks for more is refused).",
				lim.Timeout.Seconds(), MinTimeout.Seconds(), lim.MaxTimeout.Seconds()))),
		mcpgo.WithObject("inputs", mcpgo.Description(fmt.Sprintf(
			"A JSON object given to the code as the variable `inputs` (%s), so results can be chained "+
				"without pasting data into code. At most %s as JSON, nested at most %d deep.", l.Tool.InputsIn, lim.MaxCode, MaxInputsDepth))),
		s.filesArgument(l),
		mcpgo.WithSchemaAdditionalProperties(false),
		mcpgo.WithRawOutputSchema(json.RawMessage(outputSchema)),
	)
}

// MinTimeout is the shortest timeout_seconds a call may ask for: the
// worker counts in milliseconds, and a value that rounded to zero would
// silently mean the default.
const MinTimeout = time.Millisecond

// maxTimeoutSeconds bounds timeout_seconds before it becomes a Duration,
// which a larger number would overflow; checkTimeout then holds it to
// --max-timeout.
const maxTimeoutSeconds = 1e6

// MaxInputsDepth bounds how deeply `inputs` may nest. Decoding deeper
// values recurses in the guest's runtime (CPython's json module gives up
// near its recursion limit of 1000, inside the bootstrap rather than the
// guest's code), and no data a program passes along nests this deep.
const MaxInputsDepth = 100

// jsonDepth returns how deeply v nests, counting objects and arrays, and
// stops counting past limit.
func jsonDepth(v any, limit int) int {
	if limit < 0 {
		return 0
	}
	deepest := 0
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, limit-1))
			if deepest >= limit {
				break
			}
		}
	case []any:
		for _, e := range v {
			deepest = max(deepest, jsonDepth(e, limit-1))
			if deepest >= limit {
				break
			}
		}
	default:
		return 0
	}
	return deepest + 1
}

// ArgumentNames are the tools' arguments, as ParseArguments takes them.
// The transports refuse a call whose arguments hold a key that differs
// from one of them only by case or Unicode folding (package toolcall).
var ArgumentNames = []string{"code", "timeout_seconds", "inputs", "files"}

// Arguments are a tool call's validated arguments.
type Arguments struct {
	Code string
	// Inputs is the `inputs` object as JSON, or nil.
	Inputs json.RawMessage
	// Timeout is timeout_seconds, or zero when absent.
	Timeout time.Duration
	// Files are the `files` passed in, checked and sorted by path.
	Files []fileset.File
}

// ParseArguments validates a tool call's arguments as the client sent them,
// with as many files as any server takes. It never panics, whatever the
// shape of raw.
func ParseArguments(raw any) (Arguments, error) {
	return parseArguments(raw, fileset.MaxListed)
}

// parseArguments is ParseArguments with at most maxFiles files: more are
// refused with a *supervisor.FilesCountError before any is decoded.
func parseArguments(raw any, maxFiles int) (Arguments, error) {
	if b, ok := raw.(json.RawMessage); ok {
		raw = nil
		if len(b) > 0 {
			if err := json.Unmarshal(b, &raw); err != nil {
				return Arguments{}, fmt.Errorf("arguments are not valid JSON: %v", err)
			}
		}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return Arguments{}, fmt.Errorf("arguments must be an object with a string field \"code\"")
	}
	var args Arguments
	v, ok := m["code"]
	if !ok {
		return Arguments{}, fmt.Errorf("missing required argument \"code\" (the source code to run, as a string)")
	}
	if args.Code, ok = v.(string); !ok {
		return Arguments{}, fmt.Errorf("argument \"code\" must be a string, got %s", jsonType(v))
	}
	for k, v := range m {
		switch k {
		case "code":
		case "timeout_seconds":
			f, ok := v.(float64)
			if !ok {
				return Arguments{}, fmt.Errorf("argument \"timeout_seconds\" must be a number of seconds, got %s", jsonType(v))
			}
			if f < MinTimeout.Seconds() {
				return Arguments{}, fmt.Errorf("argument \"timeout_seconds\" is %g, below the smallest timeout of %g seconds; leave it out for the server's default",
					f, MinTimeout.Seconds())
			}
			if f > maxTimeoutSeconds {
				return Arguments{}, fmt.Errorf("argument \"timeout_seconds\" is %g, far above the most any call may ask for", f)
			}
			args.Timeout = time.Duration(f * float64(time.Second))
		case "inputs":
			obj, ok := v.(map[string]any)
			if !ok {
				return Arguments{}, fmt.Errorf("argument \"inputs\" must be a JSON object, got %s", jsonType(v))
			}
			if d := jsonDepth(obj, MaxInputsDepth+1); d > MaxInputsDepth {
				return Arguments{}, fmt.Errorf("argument \"inputs\" nests more than %d levels deep; flatten it or pass the deep part as a JSON string", MaxInputsDepth)
			}
			b, err := json.Marshal(obj)
			if err != nil {
				return Arguments{}, fmt.Errorf("argument \"inputs\": %v", err)
			}
			args.Inputs = b
		case "files":
			if m, ok := v.(map[string]any); ok && len(m) > maxFiles {
				return Arguments{}, &supervisor.FilesCountError{N: len(m), Max: maxFiles}
			}
			files, err := fileset.FromArgument(v)
			if err != nil {
				return Arguments{}, err
			}
			args.Files = files
		default:
			return Arguments{}, fmt.Errorf("unknown argument %q: the arguments are \"code\", \"timeout_seconds\", \"inputs\" and \"files\"", k)
		}
	}
	return args, nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func (s *tools) handler(lang string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		// A transport that split the call decoded its arguments already,
		// and mcp-go saw them empty (package toolcall).
		call := toolcall.FromContext(ctx)
		raw := req.GetRawArguments()
		if call != nil {
			raw = call.Arguments
		}
		args, err := parseArguments(raw, s.cfg.Limits.MaxFilesInCount)
		if err == nil {
			err = s.checkTimeout(args.Timeout)
		}
		if err != nil {
			return toolResult(s.sup.Refuse(lang, err)), nil
		}
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			stop := reportProgress(ctx, req.Params.Meta.ProgressToken)
			defer stop()
		}
		a := s.sup.Execute(ctx, supervisor.Request{Language: lang, Code: args.Code, Inputs: args.Inputs, Timeout: args.Timeout, Files: args.Files})
		return toolAnswer(a, call, int64(s.cfg.Limits.MaxAnswer)), nil
	}
}

// checkTimeout refuses a timeout_seconds above --max-timeout, as the input
// schema's maximum says: a call silently cut short of what it asked for
// would look like a slow program.
func (s *tools) checkTimeout(asked time.Duration) error {
	if most := s.cfg.Limits.MaxTimeout; asked > most {
		return fmt.Errorf("argument \"timeout_seconds\" is %g, above the most a call may ask for on this server: %g seconds (--max-timeout)",
			asked.Seconds(), most.Seconds())
	}
	return nil
}

// progressEvery is how often a running call reports progress.
const progressEvery = time.Second

// reportProgress sends notifications/progress about once a second while a
// call runs, with the elapsed seconds as progress, so a client can show the
// call is alive (and keep its own request timeout from firing). The
// returned function stops it.
func reportProgress(ctx context.Context, token mcpgo.ProgressToken) (stop func()) {
	srv := server.ServerFromContext(ctx)
	if srv == nil {
		return func() {}
	}
	done := make(chan struct{})
	start := time.Now()
	go func() {
		t := time.NewTicker(progressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				elapsed := time.Since(start).Truncate(time.Second).Seconds()
				_ = srv.SendNotificationToClient(ctx, string(mcpgo.MethodNotificationProgress), map[string]any{
					"progressToken": token,
					"progress":      elapsed,
					"message":       fmt.Sprintf("running for %gs", elapsed),
				})
			}
		}
	}()
	return func() { close(done) }
}

// files says what a language's code sees of a file system, for its tool
// description.
func (s *tools) files(l runtimes.Language) string {
	if !l.Files.InScratch {
		return "There is no file system and no network"
	}
	var b strings.Builder
	if len(s.bundled) > 0 {
		if l.Packages != nil {
			b.WriteString(l.Packages.BuiltIn())
		}
		fmt.Fprintf(&b, "Bundled pure-Python packages, importable by these names: %s. ", strings.Join(s.bundled, ", "))
	}
	if len(s.pythonPackages) > 0 {
		fmt.Fprintf(&b, "Extra packages, importable: %s. ", strings.Join(s.pythonPackages, ", "))
	}
	if s.cfg.Limits.Scratch > 0 {
		fmt.Fprintf(&b, "Files can be written only in a private in-memory /tmp of %s (also the working "+
			"directory), which holds at the start only the files passed in and an empty outputs/, gone after the "+
			"call; the rest is read-only", s.cfg.Limits.Scratch)
	} else {
		b.WriteString("No file can be written")
	}
	b.WriteString(". There is no network")
	return b.String()
}
