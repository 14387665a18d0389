package compiled

import _ "embed"

// The image files are made by make (runtimes/compiled/write) and never
// committed.
var (
	//go:embed dist/python.image
	pythonImage []byte
	//go:embed dist/javascript.image
	javascriptImage []byte
	//go:embed dist/ASSETS
	assets []byte
)

var images = map[string][]byte{"python": pythonImage, "javascript": javascriptImage}
