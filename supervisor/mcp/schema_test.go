package mcp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"capsule/runtimes"
	"capsule/runtimes/javascript"
	"capsule/runtimes/python"
	"capsule/supervisor"
)

// portableKeywords are the JSON Schema keywords the tools' schemas may
// use: those every client reads the same way. A schema with another
// keyword fails TestOutputSchemaIsPortable, and a validator below that
// met it would refuse to guess.
// testLanguages are the languages the tools are tested with, as
// cmd/capsule makes them (without compiled images).
var testLanguages = runtimes.Languages{python.Language(), javascript.Language()}

var portableKeywords = []string{"type", "properties", "required", "items", "anyOf", "enum", "description",
	"additionalProperties", "maxLength", "minimum", "maximum"}

// lintSchema reports each place in schema (at path) that a strict client
// or the MCP Inspector's --strict mode warns about: a "type" that is not
// one string (a type array, such as ["string", "null"]), a schema with
// neither "type" nor "anyOf" (a value of any type), an anyOf branch
// without a single type, an unknown keyword.
func lintSchema(path string, schema any) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: schema %v is not an object", path, schema)}
	}
	var problems []string
	for k := range m {
		if !slices.Contains(portableKeywords, k) {
			problems = append(problems, fmt.Sprintf("%s: keyword %q", path, k))
		}
	}
	typ, hasType := m["type"]
	branches, hasAnyOf := m["anyOf"].([]any)
	switch {
	case hasType && hasAnyOf:
		problems = append(problems, path+": both type and anyOf")
	case hasType:
		if _, ok := typ.(string); !ok {
			problems = append(problems, fmt.Sprintf("%s: type %v is not one string", path, typ))
		}
	case hasAnyOf:
		for i, b := range branches {
			bm, _ := b.(map[string]any)
			if _, ok := bm["type"].(string); !ok {
				problems = append(problems, fmt.Sprintf("%s.anyOf[%d]: a branch without one type", path, i))
			}
			problems = append(problems, lintSchema(fmt.Sprintf("%s.anyOf[%d]", path, i), b)...)
		}
	default:
		problems = append(problems, path+": no type (a value of any type)")
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for name, p := range props {
			problems = append(problems, lintSchema(path+"."+name, p)...)
		}
	}
	if items, ok := m["items"]; ok {
		problems = append(problems, lintSchema(path+"[]", items)...)
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		problems = append(problems, lintSchema(path+"{}", ap)...)
	}
	return problems
}

// TestOutputSchemaIsPortable: both tools' input and output schemas draw
// none of the warnings above, and every limit an answer can name is in
// the output schema's enum.
func TestOutputSchemaIsPortable(t *testing.T) {
	s := &tools{cfg: supervisor.DefaultConfig(testLanguages)}
	for _, l := range testLanguages {
		b, err := json.Marshal(s.tool(l))
		if err != nil {
			t.Fatal(err)
		}
		var tool struct {
			InputSchema  map[string]any `json:"inputSchema"`
			OutputSchema map[string]any `json:"outputSchema"`
		}
		if err := json.Unmarshal(b, &tool); err != nil {
			t.Fatal(err)
		}
		for _, p := range append(lintSchema(l.Tool.Name+".inputSchema", tool.InputSchema), lintSchema(l.Tool.Name+".outputSchema", tool.OutputSchema)...) {
			t.Error(p)
		}
	}
	for _, limit := range []string{runtimes.LimitTimeout, runtimes.LimitMemory, runtimes.LimitOutput, runtimes.LimitCodeSize,
		runtimes.LimitScratch, runtimes.LimitFilesIn, runtimes.LimitFilesOut, runtimes.LimitShutdown} {
		if !strings.Contains(limitNames, `"`+limit+`"`) {
			t.Errorf("limit %q is not in the output schema's enum", limit)
		}
	}
}

// TestAnswersConformToOutputSchema: answers of every shape validate
// against the output schema as a client checks structuredContent.
func TestAnswersConformToOutputSchema(t *testing.T) {
	typ, repr := "tuple", "(1, 2)"
	scratch := runtimes.LimitScratch
	answers := []*supervisor.Answer{
		{Result: json.RawMessage(`[1,2]`), ResultType: &typ, ResultRepr: &repr},
		{Result: json.RawMessage(`"x"`), ResultType: &typ, ResultRepr: &repr},
		{Result: json.RawMessage(`{"a":null}`), ResultType: &typ, ResultRepr: &repr},
		{Result: json.RawMessage(`1.5`), ResultType: &typ, ResultRepr: &repr},
		{Result: json.RawMessage(`true`), ResultType: &typ, ResultRepr: &repr},
		{},
		{Error: &runtimes.ErrorInfo{Type: "ZeroDivisionError", Message: "division by zero"}},
		{Limit: &scratch, Error: &runtimes.ErrorInfo{Type: "ScratchLimitError", Message: "scratch: full"}},
		{Files: []supervisor.FileInfo{{Path: "a.csv", Size: 3, MIMEType: "text/csv"}, {Path: "b.png", Size: 9, MIMEType: "image/png", Truncated: true}}},
	}
	for _, a := range answers {
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		checkConformsToOutputSchema(t, v)
	}
	// And the validator is not blind: a wrong answer fails it.
	var schema any
	if err := json.Unmarshal([]byte(outputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"stdout":"","stderr":"","result":null,"result_type":null,"result_repr":null,"error":null,"limit":"nonsense","duration_ms":0,"stdout_truncated":false,"stderr_truncated":false}`,
		`{"stdout":"","stderr":"","result":null,"result_type":null,"result_repr":null,"error":{"type":"X"},"limit":null,"duration_ms":0,"stdout_truncated":false,"stderr_truncated":false}`,
		`{"stdout":"","stderr":"","result":null,"result_type":5,"result_repr":null,"error":null,"limit":null,"duration_ms":0,"stdout_truncated":false,"stderr_truncated":false}`,
		`{"stdout":"","result":null,"result_type":null,"result_repr":null,"error":null,"limit":null,"duration_ms":0,"stdout_truncated":false,"stderr_truncated":false}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if err := validate("", schema, v); err == nil {
			t.Errorf("the validator accepts %s", bad)
		}
	}
}

// checkConformsToOutputSchema fails t when v does not validate against
// the tools' output schema.
func checkConformsToOutputSchema(t *testing.T, v map[string]any) {
	t.Helper()
	var schema any
	if err := json.Unmarshal([]byte(outputSchema), &schema); err != nil {
		t.Fatal(err)
	}
	if err := validate("", schema, v); err != nil {
		b, _ := json.Marshal(v)
		t.Errorf("structuredContent %s does not conform to the output schema: %v", b, err)
	}
}

// validate checks v against the subset of JSON Schema that lintSchema
// admits; a keyword outside it is an error rather than ignored.
func validate(path string, schema, v any) error {
	m := schema.(map[string]any)
	for k := range m {
		if !slices.Contains(portableKeywords, k) {
			return fmt.Errorf("%s: the validator does not know %q", path, k)
		}
	}
	if branches, ok := m["anyOf"].([]any); ok {
		var errs []string
		for _, b := range branches {
			err := validate(path, b, v)
			if err == nil {
				return nil
			}
			errs = append(errs, err.Error())
		}
		return fmt.Errorf("%s: no anyOf branch matches: %s", path, strings.Join(errs, "; "))
	}
	if typ, ok := m["type"].(string); ok && jsonTypeName(v) != typ && !(typ == "number" && jsonTypeName(v) == "integer") {
		return fmt.Errorf("%s: %v is %s, want %s", path, v, jsonTypeName(v), typ)
	}
	if enum, ok := m["enum"].([]any); ok && !slices.Contains(enum, v) {
		return fmt.Errorf("%s: %v is not one of %v", path, v, enum)
	}
	obj, _ := v.(map[string]any)
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: %q is missing", path, r)
			}
		}
	}
	if props, ok := m["properties"].(map[string]any); ok {
		for k, e := range obj {
			p, known := props[k]
			if !known {
				if ap, ok := m["additionalProperties"].(bool); ok && !ap {
					return fmt.Errorf("%s: unknown property %q", path, k)
				}
				continue
			}
			if err := validate(path+"."+k, p, e); err != nil {
				return err
			}
		}
	}
	if items, ok := m["items"]; ok {
		for i, e := range v.([]any) {
			if err := validate(fmt.Sprintf("%s[%d]", path, i), items, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonTypeName is JSON Schema's name for the type of a decoded value.
func jsonTypeName(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
