package compiled

import _ "embed"

// The image files are made by make (runtimes/compiled/write.sh, which runs
// the arm64 writer under qemu-user on an amd64 machine) and never committed.
var (
	//go:embed dist/linux-arm64/python.image
	pythonImage []byte
	//go:embed dist/linux-arm64/python-numpy.image
	pythonNumpyImage []byte
	//go:embed dist/linux-arm64/javascript.image
	javascriptImage []byte
	//go:embed dist/linux-arm64/ASSETS
	assets []byte
)

var images = map[string][]byte{"python": pythonImage, "python-numpy": pythonNumpyImage, "javascript": javascriptImage}
