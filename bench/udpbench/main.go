// Command udpbench runs one side of bench/udp.sh: a sonde server with its
// STAMP reflector (-serve), or a `sonde udp` run that writes its JSON result
// (-server). It exists so the benchmark does not depend on the CLI wiring;
// it calls the same packages as `sonde udp` and `sonde serve`.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sonde-project/sonde/internal/server"
	"github.com/sonde-project/sonde/internal/udptest"
)

func main() {
	serve := flag.String("serve", "", "run a server on this HTTP address")
	udpAddr := flag.String("udp", ":0", "the server's reflector address")
	srv := flag.String("server", "", "run the UDP test against this server")
	interval := flag.Duration("i", 100*time.Microsecond, "probe interval")
	duration := flag.Duration("t", 10*time.Second, "duration")
	size := flag.Int("s", 64, "probe size")
	out := flag.String("json", "-", "result file")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *serve, *udpAddr, *srv, *interval, *duration, *size, *out); err != nil {
		fmt.Fprintln(os.Stderr, "udpbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, serve, udpAddr, srv string, interval, duration time.Duration, size int, out string) error {
	if serve != "" {
		s, err := server.New(server.Config{Addr: serve, UDPAddr: udpAddr, PerIPPerMinute: -1, UDPMaxRate: 20000})
		if err != nil {
			return err
		}
		if _, err := s.StartUDP(); err != nil {
			return err
		}
		return s.ListenAndServe(ctx, func(a []net.Addr) { fmt.Fprintln(os.Stderr, "udpbench: serving on", a) })
	}
	res, err := udptest.Run(ctx, udptest.Options{Server: srv, Interval: interval, Duration: duration,
		PacketBytes: size, Timeout: time.Second, Software: "udpbench"})
	if res == nil {
		return err
	}
	f := os.Stdout
	if out != "-" {
		if f, err = os.Create(out); err != nil {
			return err
		}
		defer f.Close()
	}
	enc := json.NewEncoder(f)
	enc.SetIndent("", " ")
	if werr := enc.Encode(res); werr != nil {
		return werr
	}
	return err
}
