package compiled

import _ "embed"

// The image files are made by make (runtimes/compiled/write.sh) and never
// committed.
var (
	//go:embed dist/linux-amd64/python.image
	pythonImage []byte
	//go:embed dist/linux-amd64/python-numpy.image
	pythonNumpyImage []byte
	//go:embed dist/linux-amd64/javascript.image
	javascriptImage []byte
	//go:embed dist/linux-amd64/ASSETS
	assets []byte
)

var images = map[string][]byte{"python": pythonImage, "python-numpy": pythonNumpyImage, "javascript": javascriptImage}
