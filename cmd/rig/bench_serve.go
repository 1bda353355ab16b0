package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"rig/bench"
)

// newBenchServeCmd is `rig bench serve`: the far host of a two-host run.
func newBenchServeCmd(a *app) *cobra.Command {
	var listen, tokenFile string
	var quiet bool
	c := &cobra.Command{
		Use:   "serve",
		Short: "Far side of a two-host run: run the receiver or forwarder a near `rig bench gen|loop --peer` asks for, and report back",
		Long: `rig bench serve listens on --listen ADDR:PORT for a near rig (rig bench gen|loop --peer
ADDR:PORT --peer-token-file F). A caller must prove it holds the token of --token-file (an HMAC
over a fresh nonce; the token never crosses the network nor shows in a log). serve runs only
bench receivers (for gen) and forwarders (for loop) whose config validates, nothing that reads
or writes this host's files, one at a time, each in a child process (a fresh EAL), and sends
the result back. Nothing is encrypted: listen on a management network. SIGINT/SIGTERM stop it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.benchServe(cmd.Context(), listen, tokenFile, quiet)
		},
	}
	c.Flags().StringVar(&listen, "listen", "", "ADDR:PORT to listen on, e.g. 10.0.0.2:7400 (required; 0.0.0.0:PORT for every address; port 0 picks one and says which)")
	c.Flags().StringVar(&tokenFile, "token-file", "", "file holding the shared token (required; mode 0600, at least 16 bytes)")
	c.Flags().BoolVar(&quiet, "quiet", false, "do not copy the runs' live lines and EAL log to stderr")
	return c
}

func (a *app) benchServe(ctx context.Context, listen, tokenFile string, quiet bool) error {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return withCode(exitUsage, fmt.Errorf("--listen %q: want ADDR:PORT with the address to listen on (e.g. 10.0.0.2:7400, or 0.0.0.0:7400 for every address)", listen))
	}
	token, err := readTokenFile(tokenFile)
	if err != nil {
		return withCode(exitUsage, fmt.Errorf("--token-file: %w", err))
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("rig bench serve: the rig binary: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return bench.NewError("bench serve", err, "", "give an address of this host (ip -br addr) and a free port")
	}
	log := &lockedWriter{w: a.errOut}
	fmt.Fprintf(log, "rig bench serve: listening on %s (%s)\n", ln.Addr(), bench.PeerProtocol)
	var childLog io.Writer
	if !quiet {
		childLog = &prefixWriter{w: log, prefix: "far run: "}
	}
	srv := &bench.Server{Token: token, Log: log, Run: func(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error) {
		return bench.Child{Exe: exe, Stderr: childLog, Ready: ready}.Run(ctx, cfg)
	}}
	err = srv.Serve(ctx, ln)
	if err == nil || errors.Is(ctx.Err(), context.Canceled) {
		fmt.Fprintln(log, "rig bench serve: stopped")
	}
	return err
}

// lockedWriter serialises writes from the connections' goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter prefixes each complete line.
type prefixWriter struct {
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexAny(p.buf, "\n\r")
		if i < 0 {
			break
		}
		if line := p.buf[:i]; len(bytes.TrimSpace(line)) > 0 {
			fmt.Fprintf(p.w, "%s%s\n", p.prefix, line)
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
