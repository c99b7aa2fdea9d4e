package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// probeTimeout bounds one probe connection. Loopback answers in
// microseconds; the bound only matters when a server is wedged.
const probeTimeout = 500 * time.Millisecond

// errNotReady reports a probe answered, but not with what readiness needs.
var errNotReady = errors.New("redistest: not ready")

// probe sends one command to addr on a fresh connection and returns the
// simple-string or bulk-string reply. An error reply (such as -LOADING) is
// returned as an error.
//
// It speaks RESP directly instead of using go-redis, because a go-redis
// client polled against a server that is still starting would retry, dial in
// background goroutines and log pool errors; a probe must do one attempt and
// leave nothing behind.
func probe(addr string, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, probeTimeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(probeTimeout)); err != nil {
		return "", err
	}
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, req.String()); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

// readReply reads one RESP2 simple string, error or bulk string, the only
// reply kinds that PING and CLUSTER INFO produce.
func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return "", fmt.Errorf("redistest: empty reply line")
	}
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redistest: server replied %q", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", fmt.Errorf("redistest: bad bulk length %q", line)
		}
		buf := make([]byte, n+2) // the payload and its CRLF
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("redistest: unexpected reply %q", line)
	}
}

// pingOK is a readiness condition: addr answers PING with PONG.
func pingOK(addr string) error {
	reply, err := probe(addr, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return fmt.Errorf("%w: PING replied %q", errNotReady, reply)
	}
	return nil
}

// clusterOK is a readiness condition: the node at addr reports
// cluster_state:ok with all 16384 slots assigned and served.
func clusterOK(addr string) error {
	info, err := probe(addr, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	fields := make(map[string]string)
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	if fields["cluster_state"] != "ok" ||
		fields["cluster_slots_assigned"] != "16384" ||
		fields["cluster_slots_ok"] != "16384" {
		return fmt.Errorf("%w: cluster_state:%s cluster_slots_assigned:%s cluster_slots_ok:%s",
			errNotReady, fields["cluster_state"], fields["cluster_slots_assigned"], fields["cluster_slots_ok"])
	}
	return nil
}
