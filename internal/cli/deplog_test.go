package cli

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"go.opentelemetry.io/otel"
	vtlog "vitess.io/vitess/go/vt/log"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: what the linked libraries log (OpenTelemetry's errors, the
// standard log package, the Go MySQL driver, vitess's logger, RocketMQ's
// rlog) comes out through Herald's logger,
// in log.format and filtered by log.level: text lines in a text log, JSON
// in a JSON one, OpenTelemetry's errors at WARN.
func TestDependencyLogsFollowTheLogFormat(t *testing.T) {
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	for _, format := range []string{"text", "json"} {
		var buf bytes.Buffer
		a := &app{drivers: testDrivers, stderr: &buf}
		if _, err := a.logger(&config.File{Log: config.Log{Format: format, Level: "info"}}); err != nil {
			t.Fatal(err)
		}
		otel.Handle(errors.New("traces export: connection refused"))
		log.Print("a library's complaint")
		vtlog.Info("vitess says hello")
		vtlog.Debug("vitess debug, below log.level")
		pingHangUp(t)
		rlog.Warning("rocketmq client trouble", map[string]any{"broker": "b1"})
		rlog.Info("rocketmq chatter, below its log_level", nil)
		want := []string{`time=\S+ level=WARN msg="opentelemetry error" error="traces export: connection refused"`,
			`time=\S+ level=WARN msg="a library's complaint"`, `time=\S+ level=INFO msg="vitess says hello"`, `time=\S+ level=WARN msg="packets.go:\d+ unexpected EOF"`,
			`time=\S+ level=WARN msg="rocketmq client trouble" broker=b1`}
		if format == "json" {
			want = []string{`\{"time":"\S+","level":"WARN","msg":"opentelemetry error","error":"traces export: connection refused"\}`,
				`\{"time":"\S+","level":"WARN","msg":"a library's complaint"\}`, `\{"time":"\S+","level":"INFO","msg":"vitess says hello"\}`,
				`\{"time":"\S+","level":"WARN","msg":"packets.go:\d+ unexpected EOF"\}`,
				`\{"time":"\S+","level":"WARN","msg":"rocketmq client trouble","broker":"b1"\}`}
		}
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != len(want) {
			t.Fatalf("log.format %s: %d lines, want %d:\n%s", format, len(lines), len(want), buf.String())
		}
		for i, w := range want {
			if !regexp.MustCompile("^" + w + "$").MatchString(lines[i]) {
				t.Errorf("log.format %s: line %d is %q, want %s", format, i+1, lines[i], w)
			}
		}
	}
}

// Rule: with log.format text, a `herald run` whose OTLP exporter points at
// a closed loopback port logs the failed exports as text lines at WARN; no
// line is JSON (they were JSON lines at INFO from a vitess log shim).
func TestOTLPExportErrorsAreTextLines(t *testing.T) {
	// Nothing listens on the port; the exporter sends every 100 ms, not 5 s.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fmt.Sprintf("http://127.0.0.1:%d", testenv.FreePort(t)))
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	appendConfig(t, cfg, "log: {format: text}\n")
	if code, _, e := cliRun(t, "enqueue", "--create", "--config", cfg, "--topic", "t", "--type", "T"); code != 0 {
		t.Fatal(e)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 30*time.Second, "a failed export logged", func() bool {
		return strings.Contains(run.stderr.String(), "traces export")
	})
	run.terminate(t)
	for _, line := range strings.Split(strings.TrimSpace(run.stderr.String()), "\n") {
		if strings.HasPrefix(line, `{"specversion"`) {
			continue // the event, as the stdout broker prints it
		}
		if strings.HasPrefix(line, "{") || (!strings.HasPrefix(line, "time=") && !strings.HasPrefix(line, "herald: ")) {
			t.Errorf("a line of a text log is not text: %q", line)
		}
		if strings.Contains(line, "traces export") && !strings.Contains(line, "level=WARN") {
			t.Errorf("a failed export is not a warning: %q", line)
		}
	}
}

// pingHangUp pings a MySQL server that hangs up at once, which the Go MySQL
// driver logs ("unexpected EOF").
func pingHangUp(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	db, err := sql.Open("mysql", "u@tcp("+ln.Addr().String()+")/db?timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(0)
	if db.Ping() == nil {
		t.Fatal("a server that hangs up answered the ping")
	}
}
