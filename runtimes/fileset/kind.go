package fileset

import (
	"bytes"
	"path"
	"strings"
	"unicode/utf8"
)

// Kind is what a file is, as an answer presents it.
type Kind struct {
	// MIME is the file's media type: the image format its magic bytes
	// show, else the one its extension names, else
	// application/octet-stream.
	MIME string
	// Image marks a PNG, JPEG, GIF or WebP file, known by its magic bytes
	// whatever its name.
	Image bool
	// Text marks a file of a text type (by extension) whose content is
	// valid UTF-8.
	Text bool
}

// Classify says what the file at p holding data is.
func Classify(p string, data []byte) Kind {
	if mime := imageType(data); mime != "" {
		return Kind{MIME: mime, Image: true}
	}
	return Kind{MIME: MIMEType(p), Text: IsText(p, data)}
}

// IsText reports whether a file at p holding data is text: its extension
// names a text type and its content is valid UTF-8.
func IsText(p string, data []byte) bool {
	return textTypes[extension(p)] && utf8.Valid(data)
}

// MIMEType is the media type p's extension names, or
// application/octet-stream. The table is capsule's own, not the host's
// (/etc/mime.types differs from one machine to the next).
func MIMEType(p string) string {
	if t, ok := mimeTypes[extension(p)]; ok {
		return t
	}
	return "application/octet-stream"
}

func extension(p string) string {
	return strings.ToLower(strings.TrimPrefix(path.Ext(p), "."))
}

// textTypes are the extensions whose files are text when they are UTF-8.
var textTypes = map[string]bool{
	"csv": true, "tsv": true, "json": true, "jsonl": true, "ndjson": true, "txt": true, "text": true,
	"log": true, "md": true, "markdown": true, "html": true, "htm": true, "css": true, "svg": true,
	"xml": true, "yaml": true, "yml": true, "toml": true, "ini": true, "sql": true, "py": true,
	"js": true, "mjs": true, "ts": true, "sh": true, "tex": true, "rst": true,
}

var mimeTypes = map[string]string{
	"csv": "text/csv", "tsv": "text/tab-separated-values", "json": "application/json",
	"jsonl": "application/jsonl", "ndjson": "application/x-ndjson", "txt": "text/plain", "text": "text/plain",
	"log": "text/plain", "md": "text/markdown", "markdown": "text/markdown", "html": "text/html",
	"htm": "text/html", "css": "text/css", "svg": "image/svg+xml", "xml": "application/xml",
	"yaml": "application/yaml", "yml": "application/yaml", "toml": "application/toml", "ini": "text/plain",
	"sql": "application/sql", "py": "text/x-python", "js": "text/javascript", "mjs": "text/javascript",
	"ts": "text/plain", "sh": "text/x-shellscript", "tex": "text/x-tex", "rst": "text/x-rst",
	"png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
	"bmp": "image/bmp", "ico": "image/vnd.microsoft.icon", "tif": "image/tiff", "tiff": "image/tiff",
	"pdf": "application/pdf", "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
	"bz2": "application/x-bzip2", "xz": "application/x-xz", "sqlite": "application/vnd.sqlite3",
	"db": "application/vnd.sqlite3", "parquet": "application/vnd.apache.parquet",
	"xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"wav":  "audio/wav", "mp3": "audio/mpeg", "bin": "application/octet-stream",
}

// imageType is the MIME type of a PNG, JPEG, GIF or WebP image, known by
// its first bytes, or "".
func imageType(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif"
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return "image/webp"
	}
	return ""
}
