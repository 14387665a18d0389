package worker

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"capsule/ipc"
	"capsule/runtimes"
)

// compileForSnapshot compiles l's module for a snapshot worker,
// with code its compiled image: the supervisor writes into it the image
// the binary embeds (runtimes/compiled), compiled at build time, or leaves
// it empty. The module is loaded from that image as a run worker loads
// the cached one, so that a first start does not compile; when wazero
// refuses the image (this CPU lacks a feature its code uses) or there is
// none, the module is compiled for this CPU and its image written to code
// instead, for every worker to load. The reason for a refusal goes to
// stderr, which the supervisor logs.
func compileForSnapshot(ctx context.Context, l runtimes.Language, cfg runtimes.Config, code *os.File) (runtimes.Engine, error) {
	st, err := code.Stat()
	if err != nil {
		return nil, fmt.Errorf("compiled image: %w", err)
	}
	if st.Size() > 0 {
		engine, err := compileFromImage(ctx, l, cfg, code)
		if err == nil {
			return engine, nil
		}
		fmt.Fprintf(os.Stderr, "the binary's compiled image was refused, compiling instead: %v\n", err)
		if err := code.Truncate(0); err != nil {
			return nil, fmt.Errorf("compiled image: %w", err)
		}
		if _, err := code.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("compiled image: %w", err)
		}
	}
	cfg.ImageWriter = code
	return l.Compile(ctx, cfg)
}

// compileFromImage loads l's module from the image in code. The
// mapping stays for the life of the process, as the compiled code runs
// from it; it is unmapped when the image is refused.
func compileFromImage(ctx context.Context, l runtimes.Language, cfg runtimes.Config, code *os.File) (runtimes.Engine, error) {
	fd, err := unix.Dup(int(code.Fd()))
	if err != nil {
		return nil, fmt.Errorf("compiled image: %w", err)
	}
	image, err := mapImage(fd)
	if err != nil {
		return nil, err
	}
	cfg.CompiledImage = image
	engine, err := l.Compile(ctx, cfg)
	if err != nil {
		_ = unix.Munmap(image)
		return nil, err
	}
	return engine, nil
}

// compileForVariant loads l's module for a variant's snapshot
// worker from the plain snapshot's compiled image, which it is given
// sealed: a variant runs the same module, so it never compiles. It yields
// the CPU to calls first, since a variant is made while the server serves.
func compileForVariant(ctx context.Context, l runtimes.Language, cfg runtimes.Config) (runtimes.Engine, error) {
	if err := lowerPriority(); err != nil {
		return nil, fmt.Errorf("lowering the priority of a variant's snapshot worker: %w", err)
	}
	return compileFromImage(ctx, l, cfg, os.NewFile(ipc.ImageFD, "compiled image"))
}
