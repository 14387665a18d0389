package mcp

import (
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"capsule/runtimes"
	"capsule/runtimes/fileset"
	"capsule/supervisor"
)

// TestFileContents: the files sent become MCP content in path order, text
// as a text resource, an image as image content, other bytes as a blob;
// a file over the files_out limit is listed, not sent.
func TestFileContents(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	a := &supervisor.Answer{}
	a.AddReturnedFiles([]fileset.File{
		{Path: "a b/summary.csv", Data: []byte("x,y\n")},
		{Path: "chart.png", Data: png},
		{Path: "data.bin", Data: []byte{0, 1}},
		{Path: "latin1.csv", Truncated: true, Size: 1000},
	}, 0, fileset.Limits{MaxBytes: 100, MaxFiles: 3})
	if a.Limit == nil || *a.Limit != runtimes.LimitFilesOut {
		t.Fatalf("limit %v", a.Limit)
	}
	contents := fileContents(a, nil)
	if len(contents) != 3 {
		t.Fatalf("%d contents", len(contents))
	}
	text, ok := contents[0].(mcpgo.EmbeddedResource).Resource.(mcpgo.TextResourceContents)
	if !ok || text.URI != "file:///tmp/outputs/a%20b/summary.csv" || text.Text != "x,y\n" || text.MIMEType != "text/csv" {
		t.Errorf("text resource %+v", contents[0])
	}
	if img, ok := contents[1].(mcpgo.ImageContent); !ok || img.MIMEType != "image/png" || img.Data != "iVBORw0KGgpyZXN0" {
		t.Errorf("image %+v", contents[1])
	}
	blob, ok := contents[2].(mcpgo.EmbeddedResource).Resource.(mcpgo.BlobResourceContents)
	if !ok || blob.Blob != "AAE=" || blob.URI != "file:///tmp/outputs/data.bin" {
		t.Errorf("blob %+v", contents[2])
	}
}

// TestFakeImageContent: a file named as an image that is not one is sent
// as bytes of a type that claims no image, and an image is sent as one
// whatever its name.
func TestFakeImageContent(t *testing.T) {
	a := &supervisor.Answer{}
	a.AddReturnedFiles([]fileset.File{
		{Path: "chart.dat", Data: []byte("\x89PNG\r\n\x1a\nrest")},
		{Path: "fake.png", Data: []byte("just text\n")},
	}, 0, fileset.Limits{MaxBytes: 1 << 20, MaxFiles: 8})
	contents := fileContents(a, nil)
	if img, ok := contents[0].(mcpgo.ImageContent); !ok || img.MIMEType != "image/png" {
		t.Errorf("chart.dat: %+v", contents[0])
	}
	res, ok := contents[1].(mcpgo.EmbeddedResource)
	if !ok {
		t.Fatalf("fake.png: %T, want an embedded resource", contents[1])
	}
	blob, ok := res.Resource.(mcpgo.BlobResourceContents)
	if !ok || blob.MIMEType != "application/octet-stream" || blob.URI != "file:///tmp/outputs/fake.png" {
		t.Errorf("fake.png: %+v", res.Resource)
	}
	if !strings.Contains(a.Text(), "fake.png (application/octet-stream, 10 bytes)") {
		t.Errorf("text %q", a.Text())
	}
}
