package mcp

import (
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
)

// filesSchema is the output schema of Answer.Files.
const filesSchema = `"type": "array",
      "description": "The files the code returned, in path order; present only when there are some. Those sent follow the text content: PNG, JPEG, GIF and WebP images as image content, other files as embedded resources at file:///tmp/outputs/PATH.",
      "items": {
        "type": "object",
        "properties": {
          "path": {"type": "string", "description": "Relative to /tmp/outputs (JavaScript: the key in outputs)."},
          "size": {"type": "integer", "description": "In bytes."},
          "mime_type": {"type": "string"},
          "truncated": {"type": "boolean", "description": "True when the file is over the files_out limit: listed, not sent."}
        },
        "required": ["path", "size", "mime_type"]
      }`

// filesArgument is the tools' `files` parameter.
func (s *tools) filesArgument(l runtimes.Language) mcpgo.ToolOption {
	return mcpgo.WithObject("files",
		mcpgo.Description(fmt.Sprintf("Files to pass in: an object mapping a relative path (such as \"data.csv\" or \"in/a.json\"; "+
			"no \"..\", at most %d bytes and %d levels, not under outputs/) to its content, a string of UTF-8 text or "+
			"{\"base64\": \"...\"} for bytes; %s. At most %s in all.",
			fileset.MaxPathBytes, fileset.MaxDepth, l.Files.Argument, s.cfg.Limits.MaxFilesIn)),
		mcpgo.AdditionalProperties(map[string]any{
			"anyOf": []any{
				map[string]any{"type": "string"},
				map[string]any{
					"type":                 "object",
					"properties":           map[string]any{"base64": map[string]any{"type": "string"}},
					"required":             []string{"base64"},
					"additionalProperties": false,
				},
			},
		}))
}

// filesAbout says in the tool description how files go in and come back,
// with an example an agent can copy.
func (s *tools) filesAbout(l runtimes.Language) string {
	lim := s.cfg.Limits
	out := fmt.Sprintf("they come back after the text, even after an error or a timeout: PNG, JPEG, GIF and WebP "+
		"as images, other files as resources (text for csv, tsv, json, txt, md, html, svg, xml, yaml), at most %s and %d "+
		"files per call, and only what fits in an answer of %s after the output (beyond that they are listed as truncated). ",
		lim.MaxFilesOut, lim.MaxFilesOutCount, lim.MaxAnswer)
	if l.Files.InScratch && lim.Scratch == 0 {
		return l.Files.NoScratch
	}
	return fmt.Sprintf(l.Files.Usage, out)
}
