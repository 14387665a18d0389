package fileset

import (
	"bytes"
	"encoding/binary"
	"path"
	"strings"
	"unicode/utf8"
)

// Kind is what a file is, as an answer presents it.
type Kind struct {
	// MIME is the file's media type. An image type comes from the bytes
	// only: the format its magic bytes show, whatever its name. Otherwise
	// it is the type the extension names, unless that names an image the
	// bytes do not show, which makes it application/octet-stream: a name
	// alone never makes a file an image.
	MIME string
	// Image marks a PNG, JPEG, GIF or WebP file, known by its magic bytes
	// whatever its name: the formats an answer sends as image content.
	Image bool
	// Text marks a file of a text type (by extension) whose content is
	// valid UTF-8.
	Text bool
}

// Classify says what the file at p holding data is.
func Classify(p string, data []byte) Kind {
	if mime, shown := imageType(data); mime != "" {
		return Kind{MIME: mime, Image: shown}
	}
	mime := MIMEType(p)
	if mime == svgType && IsText(p, data) && looksLikeSVG(data) {
		return Kind{MIME: mime, Text: true}
	}
	if strings.HasPrefix(mime, "image/") {
		return Kind{MIME: "application/octet-stream"}
	}
	return Kind{MIME: mime, Text: IsText(p, data)}
}

// ClassifyFile is Classify for a file passed in or returned. A truncated
// file's bytes are not read, so it is typed by its name alone: it is
// listed, and nothing of it is sent to be shown.
func ClassifyFile(f File) Kind {
	if f.Truncated {
		return Kind{MIME: MIMEType(f.Path)}
	}
	return Classify(f.Path, f.Data)
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

// imageType is the MIME type of an image its first bytes show, or "";
// shown says it is a PNG, JPEG, GIF or WebP, which MCP clients show as an
// image. BMP, ICO and TIFF are recognised, so that their type is right,
// and sent as bytes.
func imageType(b []byte) (mime string, shown bool) {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png", true
	case bytes.HasPrefix(b, []byte("\xff\xd8\xff")):
		return "image/jpeg", true
	case bytes.HasPrefix(b, []byte("GIF87a")), bytes.HasPrefix(b, []byte("GIF89a")):
		return "image/gif", true
	case len(b) >= 12 && bytes.Equal(b[:4], []byte("RIFF")) && bytes.Equal(b[8:12], []byte("WEBP")):
		return "image/webp", true
	case isBMP(b):
		return "image/bmp", false
	case len(b) >= 6 && bytes.HasPrefix(b, []byte("\x00\x00\x01\x00")) && (b[4] != 0 || b[5] != 0):
		return "image/vnd.microsoft.icon", false // ICONDIR: reserved 0, type 1, at least one image
	case bytes.HasPrefix(b, []byte("II*\x00")), bytes.HasPrefix(b, []byte("MM\x00*")):
		return "image/tiff", false
	}
	return "", false
}

// isBMP recognises a Windows bitmap: "BM", then a file header whose
// reserved words are zero, then one of the known DIB header sizes. "BM"
// alone would take text such as "BMW ..." for a bitmap.
func isBMP(b []byte) bool {
	if len(b) < 18 || b[0] != 'B' || b[1] != 'M' || !bytes.Equal(b[6:10], []byte{0, 0, 0, 0}) {
		return false
	}
	switch binary.LittleEndian.Uint32(b[14:18]) {
	case 12, 40, 52, 56, 64, 108, 124:
		return true
	}
	return false
}

const (
	svgType = "image/svg+xml"
	// svgSniffBytes bounds how far looksLikeSVG looks for the <svg> element.
	svgSniffBytes = 64 << 10
)

// looksLikeSVG reports whether text is an SVG document: after an optional
// byte order mark, XML declaration, comments and document type, its first
// element is <svg>.
// Only the first svgSniffBytes are looked at.
func looksLikeSVG(text []byte) bool {
	s := strings.TrimPrefix(string(text[:min(len(text), svgSniffBytes)]), "\ufeff")
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		var end string
		switch {
		case strings.HasPrefix(s, "<?"):
			end = "?>"
		case strings.HasPrefix(s, "<!--"):
			end = "-->"
		case strings.HasPrefix(s, "<!"):
			end = ">"
		case strings.HasPrefix(s, "<svg"):
			rest := s[len("<svg"):]
			return rest != "" && strings.ContainsRune(" \t\r\n/>", rune(rest[0]))
		default:
			return false
		}
		i := strings.Index(s, end)
		if i < 0 {
			return false
		}
		s = s[i+len(end):]
	}
}
