package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mark3labs/mcp-go/server"

	"capsule/ipc"
	"capsule/supervisor"
	"capsule/supervisor/mcp"
	"capsule/supervisor/mcp/mcplog"
	"capsule/supervisor/mcp/transport"
)

const serveSynopsis = "capsule serve [flags]\n\n" +
	"Serves MCP on stdio, or with --http over Streamable HTTP at " + transport.MCPPath + " (stateless, so\n" +
	"replicas can sit behind any load balancer), with /healthz and /readyz for probes.\n" +
	"Over HTTP, clients must send 'Authorization: Bearer TOKEN' when a token is set, from the\n" +
	"environment variable " + transport.AuthTokenEnv + " or --auth-token-file; binding an address\n" +
	"other than loopback without a token is refused.\n" +
	"On SIGTERM or SIGINT, running calls get --shutdown-grace to finish; a second signal stops at once."

// answerGrace is how long after the shutdown grace the HTTP server waits
// for handlers whose workers were just killed to write their answers.
const answerGrace = 2 * time.Second

func serve(args []string) int {
	fs := newFlagSet("serve", serveSynopsis)
	e := NewEnvFlags(fs)
	var c commonFlags
	c.register(e, fs)
	opts := transport.DefaultServeOptions()
	registerServeFlags(e, &opts)
	if status, ok := parse(e, args); !ok {
		return status
	}
	if status, ok := c.validate("serve"); !ok {
		return status
	}
	if err := opts.Resolve(c.cfg); err != nil {
		fmt.Fprintln(os.Stderr, "capsule serve:", err)
		return exitUsage
	}
	logger := c.logger("capsule")
	// Bind before starting any worker, so a taken port or a refused
	// exposure fails at once and cleanly.
	var ln net.Listener
	if opts.HTTP != "" {
		var err error
		if ln, err = net.Listen("tcp", opts.HTTP); err != nil {
			fmt.Fprintln(os.Stderr, "capsule serve:", err)
			return exitCodeError
		}
		defer ln.Close()
		if err := opts.CheckExposure(ln.Addr()); err != nil {
			fmt.Fprintln(os.Stderr, "capsule serve:", err)
			return exitUsage
		}
	}
	c.cfg.Prewarm = true
	sup, err := c.newSupervisor(logger)
	if err != nil {
		return startFailed("serve", err)
	}
	defer sup.Close()

	signals, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	logger.Info("limits", "timeout", c.cfg.Limits.Timeout, "max_timeout", c.cfg.Limits.MaxTimeout, "memory", c.cfg.Limits.Memory,
		"max_output", c.cfg.Limits.MaxOutput, "max_code", c.cfg.Limits.MaxCode, "scratch", c.cfg.Limits.Scratch,
		"max_concurrency", c.cfg.MaxConcurrency, "max_queue", c.cfg.MaxQueue)
	if ln != nil {
		return serveHTTP(signals, stop, sup, ln, opts, logger)
	}
	return serveStdio(signals, stop, sup, opts, logger)
}

// serveStdio serves MCP on stdin and stdout until stdin closes or a signal
// arrives. When stdin closes, running calls get the shutdown grace to
// answer. On a signal the supervisor drains first, while the stdio server
// still writes the running calls' answers; only then does the stdio server
// stop, since stopping it cancels the calls still running.
func serveStdio(signals context.Context, stop func(), sup *supervisor.Supervisor, opts transport.ServeOptions, logger hclog.InterceptLogger) int {
	// The one client of a stdio server may read the server's log: it gets
	// each line at the level it sets (logging/setLevel), and stderr still
	// gets every line.
	logs := mcplog.New()
	mcpServer := mcp.NewServer(sup, server.WithLogging(), server.WithHooks(logs.Hooks()))
	logs.Attach(mcpServer)
	logger.RegisterSink(logs)
	defer logger.DeregisterSink(logs)
	stdio := server.NewStdioServer(mcpServer)
	stdio.SetErrorLogger(logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}))
	// The stdio server's own pool only hands calls over; the supervisor's
	// max-concurrency decides how many run, and the rest wait their turn.
	server.WithWorkerPoolSize(100)(stdio)
	server.WithQueueSize(10000)(stdio)
	listen, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	// At the end of stdin, running calls get the shutdown grace to finish,
	// and their answers a little longer to be written.
	ipc.WidenPipes(ipc.StdioPipeSize, os.Stdin, os.Stdout)
	guard := transport.NewStdioGuard(os.Stdin, os.Stdout, int(opts.MaxRequestBody), answerGrace)
	guard.OnEOF = func() { drain(sup, opts.ShutdownGrace, logger) }
	stdio.SetContextFunc(guard.ServeToolCalls(mcpServer))
	go func() { done <- stdio.Listen(listen, guard, guard) }()
	logger.Info("serving MCP on stdio", "max_message", opts.MaxRequestBody)
	select {
	case err := <-done:
		// stdin closed: the guard drained the supervisor, letting running
		// calls answer for up to the shutdown grace, before Listen saw the
		// end and cancelled what was left.
		sup.Shutdown(context.Background())
		if err != nil {
			logger.Error("stdio server stopped", "error", err)
			return exitCodeError
		}
		return exitOK
	case <-signals.Done():
	}
	stop() // from now on a second signal ends the process at once
	drain(sup, opts.ShutdownGrace, logger)
	cancel()
	<-done
	logger.Info("stopped")
	return exitOK
}

// serveHTTP serves MCP over Streamable HTTP on ln until a signal arrives,
// then stops accepting and drains.
func serveHTTP(signals context.Context, stop func(), sup *supervisor.Supervisor, ln net.Listener, opts transport.ServeOptions, logger hclog.Logger) int {
	srv := transport.NewHTTPServer(mcp.NewServer(sup), sup.Ready, opts, logger)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	// Tests and scripts that bind port 0 read the port from this line.
	logger.Info("listening", "addr", ln.Addr().String(), "endpoint", transport.MCPPath,
		"auth", opts.AuthToken != "", "max_client_concurrency", opts.MaxClientConcurrency,
		"max_request_body", opts.MaxRequestBody)
	select {
	case err := <-done:
		logger.Error("HTTP server stopped", "error", err)
		drain(sup, opts.ShutdownGrace, logger)
		return exitCodeError
	case <-signals.Done():
	}
	stop() // from now on a second signal ends the process at once
	// Stop accepting and wait for the handlers, while the supervisor lets
	// running calls finish. The HTTP side waits a little past the grace:
	// calls killed at its end still have an answer to write.
	httpCtx, cancel := context.WithTimeout(context.Background(), opts.ShutdownGrace+answerGrace)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- srv.Shutdown(httpCtx) }()
	drain(sup, opts.ShutdownGrace, logger)
	if err := <-httpDone; err != nil {
		logger.Warn("HTTP connections still open after the grace period; closing them", "error", err)
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("HTTP server stopped", "error", err)
	}
	logger.Info("stopped")
	return exitOK
}

// drain lets running calls finish for up to grace, then kills them.
func drain(sup *supervisor.Supervisor, grace time.Duration, logger hclog.Logger) {
	logger.Info("shutting down: running calls may finish", "grace", grace)
	if err := sup.Drain(grace); err != nil {
		logger.Warn("grace period over: killed the calls still running", "grace", grace)
	}
}
