package main

import (
	"context"
	"github.com/hashicorp/go-hclog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mark3labs/mcp-go/server"

	"capsule/supervisor"
)

func serve(args []string) int {
	fs := newFlagSet("serve", "capsule serve [flags]")
	e := supervisor.NewEnvFlags(fs)
	var c commonFlags
	c.register(e, fs)
	if status, ok := parse(e, args); !ok {
		return status
	}
	logger := c.logger("capsule")
	c.cfg.Prewarm = true
	sup, err := c.newSupervisor(logger)
	if err != nil {
		logger.Error("cannot start", "error", err)
		return exitCodeError
	}
	defer sup.Close()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	stdio := server.NewStdioServer(supervisor.NewMCPServer(sup))
	stdio.SetErrorLogger(logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}))
	// The stdio server's own pool only hands calls over; the supervisor's
	// max-concurrency decides how many run, and the rest wait their turn.
	server.WithWorkerPoolSize(100)(stdio)
	server.WithQueueSize(10000)(stdio)
	logger.Info("serving MCP on stdio", "timeout", c.cfg.Limits.Timeout, "memory", c.cfg.Limits.Memory,
		"max_output", c.cfg.Limits.MaxOutput, "max_code", c.cfg.Limits.MaxCode,
		"max_concurrency", c.cfg.MaxConcurrency)
	if err := stdio.Listen(ctx, os.Stdin, os.Stdout); err != nil && ctx.Err() == nil {
		logger.Error("stdio server stopped", "error", err)
		return exitCodeError
	}
	return exitOK
}
