// Package compiled holds the compiled images of the runtimes' modules,
// written at build time (runtimes/compiled/write, run by make) and
// embedded in the linux/amd64 and linux/arm64 binaries, each its own
// architecture's, so that a first start loads the machine code instead of
// compiling it: compiling CPython's module is seconds of CPU, nearly all of
// a first start (minutes under emulation).
//
// The images are compiled for wazero's baseline CPU features
// (experimental.WithBaselineCPUFeatures: on amd64 SSE4.1, BMI1, LZCNT; on
// arm64 none, the backend consults none), so every build writes the same
// bytes, whichever machine or emulator runs the writer; each image's
// header records the features its code uses (Target). A CPU that lacks one
// of them refuses
// the image (wazero checks it when loading), and the snapshot worker then
// compiles the module for this CPU as it does on other platforms. They are
// part of the binary, so trusted as the binary is.
package compiled

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"

	"capsule/runtimes/provenance"
)

// Built reports an error when this binary embeds the empty placeholders
// of `make wazero` instead of compiled images.
func Built() error {
	for module, image := range images {
		if len(image) == 0 {
			return fmt.Errorf("this binary was built without the compiled %s image (runtimes/compiled/dist holds the empty placeholders of make wazero): run make build", module)
		}
	}
	return nil
}

// Image returns a module's embedded compiled image, or nil when the binary
// has none (another platform, another module). A module is named as its
// language, or as a variant's own (runtimes.Language.Module: python-numpy).
func Image(module string) []byte { return images[module] }

// Verify hashes every embedded image and compares it with the SHA-256 the
// build recorded in dist/ASSETS, which the binary embeds too: one error
// per mismatch, and one for an image that either lists and the other
// lacks; and one per image whose header says it was compiled for another
// architecture or not for the baseline CPU features. `capsule doctor`
// reports them with the runtimes' files.
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
		image := images[strings.TrimSuffix(name, ".image")]
		if got := sha256.Sum256(image); hex.EncodeToString(got[:]) != sum {
			errs = append(errs, fmt.Errorf("compiled/%s: embedded bytes have SHA-256 %x, the build recorded %s", name, got, sum))
		} else if target, err := ReadTarget(image); err != nil {
			errs = append(errs, fmt.Errorf("compiled/%s: %w", name, err))
		} else if target.GOARCH != runtime.GOARCH || !target.Baseline {
			errs = append(errs, fmt.Errorf("compiled/%s was compiled for %s, this binary is %s/%s: rebuild it with make", name, target, runtime.GOOS, runtime.GOARCH))
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
	for module := range images {
		names = append(names, module+".image")
	}
	sort.Strings(names)
	return names
}

// Target is what a compiled image's header records it was compiled for.
type Target struct {
	// GOARCH is the architecture of its machine code.
	GOARCH string
	// CPUFeatures is wazero's mask of the CPU features its code may use
	// (platform.CpuFeatureFlags): a CPU lacking one refuses the image.
	CPUFeatures uint64
	// Baseline is set when it was compiled for wazero's baseline CPU
	// features rather than the writing machine's.
	Baseline bool
	// GuardPages is set when its loads and stores of the module's own
	// memory have no bounds checks, for a guard-page memory.
	GuardPages bool
}

// String describes the target, as doctor reports it.
func (t Target) String() string {
	features := fmt.Sprintf("CPU features %#x", t.CPUFeatures)
	if t.CPUFeatures == 0 {
		features = "no optional CPU feature"
	}
	if t.Baseline {
		features += " (the baseline)"
	}
	checks := "bounds checks"
	if t.GuardPages {
		checks = "guard pages"
	}
	return fmt.Sprintf("linux/%s, %s, %s", t.GOARCH, features, checks)
}

// imageMagic starts every image (wazero patch 0001's format).
var imageMagic = []byte("WZIMAGE1")

// Image flags (wazero patch 0001's format).
const (
	flagMemoryGuardPages    = 2
	flagBaselineCPUFeatures = 4
)

// ReadTarget reads an image's header: magic, wazero version, GOARCH, CPU
// features, core features and flags, in the layout of wazero's compiled
// images (runtimes/wazero/patches/0001 and 0003).
func ReadTarget(image []byte) (Target, error) {
	var t Target
	r := image
	if !bytes.HasPrefix(r, imageMagic) {
		return t, errors.New("not a compiled image (bad magic)")
	}
	r = r[len(imageMagic):]
	str := func() (string, bool) {
		if len(r) < 1 || len(r) < 1+int(r[0]) {
			return "", false
		}
		s := string(r[1 : 1+int(r[0])])
		r = r[1+int(r[0]):]
		return s, true
	}
	if _, ok := str(); !ok { // the wazero version
		return t, errors.New("compiled image header truncated in its wazero version")
	}
	arch, ok := str()
	if !ok || len(r) < 8+8+1 {
		return t, errors.New("compiled image header truncated")
	}
	t.GOARCH = arch
	t.CPUFeatures = binary.LittleEndian.Uint64(r)
	flags := r[16] // after the CPU and core features
	t.GuardPages = flags&flagMemoryGuardPages != 0
	t.Baseline = flags&flagBaselineCPUFeatures != 0
	return t, nil
}

// Targets describes every embedded image, by file name, sorted.
func Targets() []string {
	var out []string
	for _, name := range Names() {
		t, err := ReadTarget(images[strings.TrimSuffix(name, ".image")])
		if err != nil {
			out = append(out, name+": "+err.Error())
			continue
		}
		out = append(out, name+": "+t.String())
	}
	return out
}
