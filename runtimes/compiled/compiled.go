// Package compiled holds the compiled images of the runtimes' modules,
// written at build time (runtimes/compiled/write, run by make) and
// embedded in the linux/amd64 binary, so that a first start loads the
// machine code instead of compiling it: compiling CPython's module is
// seconds of CPU, nearly all of a first start.
//
// The images are compiled for wazero's baseline CPU features
// (experimental.WithBaselineCPUFeatures: on amd64 SSE4.1, BMI1, LZCNT), so
// every build writes the same bytes; a CPU that lacks one of them refuses
// the image (wazero checks it when loading), and the snapshot worker then
// compiles the module for this CPU as it does on other platforms. They are
// part of the binary, so trusted as the binary is.
package compiled

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"capsule/runtimes/provenance"
)

// Image returns language's embedded compiled image, or nil when the binary
// has none (another platform, another language).
func Image(language string) []byte { return images[language] }

// Verify hashes every embedded image and compares it with the SHA-256 the
// build recorded in dist/ASSETS, which the binary embeds too: one error
// per mismatch, and one for an image that either lists and the other
// lacks. `capsule doctor` reports them with the runtimes' files.
func Verify() []error {
	if images == nil {
		return nil
	}
	recorded, err := provenance.ParseSums(string(assets))
	if err != nil {
		return []error{fmt.Errorf("compiled images: ASSETS: %w", err)}
	}
	var errs []error
	for _, name := range Names() {
		sum, ok := recorded[name]
		if !ok {
			errs = append(errs, fmt.Errorf("compiled/%s is embedded but its build recorded no hash for it in ASSETS", name))
			continue
		}
		if got := sha256.Sum256(images[strings.TrimSuffix(name, ".image")]); hex.EncodeToString(got[:]) != sum {
			errs = append(errs, fmt.Errorf("compiled/%s: embedded bytes have SHA-256 %x, the build recorded %s", name, got, sum))
		}
		delete(recorded, name)
	}
	for name := range recorded {
		errs = append(errs, fmt.Errorf("compiled/%s: the build recorded it in ASSETS but the binary does not embed it", name))
	}
	return errs
}

// Names are the file names of the embedded images, sorted.
func Names() []string {
	var names []string
	for language := range images {
		names = append(names, language+".image")
	}
	sort.Strings(names)
	return names
}
