package fileset

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// FromArgument decodes a tool call's `files` argument, as encoding/json
// decodes it into an any: an object that maps each path to its content,
// either a string (UTF-8 text) or {"base64": "..."} (bytes). Base64 is the
// standard alphabet, padded or not; line breaks in it are ignored. The
// files are checked with Check and come back sorted by path.
func FromArgument(v any) ([]File, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("argument \"files\" must be an object mapping each path to its content, got %s", typeName(v))
	}
	files := make([]File, 0, len(m))
	for p, content := range m {
		f, err := decodeContent(p, content)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	if err := Check(files); err != nil {
		return nil, err
	}
	return files, nil
}

// decodeContent turns one path's content into a File.
func decodeContent(p string, content any) (File, error) {
	switch c := content.(type) {
	case string:
		return File{Path: p, Data: []byte(c)}, nil
	case map[string]any:
		b64, ok := c["base64"].(string)
		if !ok || len(c) != 1 {
			break
		}
		data, err := DecodeBase64(b64)
		if err != nil {
			return File{}, &PathError{Path: p, Rule: err.Error()}
		}
		return File{Path: p, Data: data, Binary: true}, nil
	}
	return File{}, &PathError{Path: p, Rule: fmt.Sprintf(
		"the content must be a string (UTF-8 text) or {\"base64\": \"...\"} (bytes), got %s", typeName(content))}
}

// DecodeBase64 decodes standard base64, padded or not, ignoring line
// breaks, and says where it is not base64.
func DecodeBase64(s string) ([]byte, error) {
	enc := base64.StdEncoding
	if !strings.HasSuffix(strings.TrimRight(s, "\r\n"), "=") {
		enc = base64.RawStdEncoding
	}
	data, err := enc.DecodeString(s)
	if err != nil {
		if e, ok := err.(base64.CorruptInputError); ok {
			return nil, fmt.Errorf("the content is not valid base64 (standard alphabet A-Z a-z 0-9 + /): bad input at byte %d", int64(e))
		}
		return nil, fmt.Errorf("the content is not valid base64: %v", err)
	}
	return data, nil
}

// typeName names a JSON value's type as encoding/json decodes it.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
