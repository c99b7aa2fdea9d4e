package redistest

import (
	"errors"
	"net"
)

// clusterBusOffset is the distance from a node's client port to its cluster
// bus port, fixed by Redis when --cluster-port is not given.
const clusterBusOffset = 10000

// maxPortAttempts bounds the search for free ports, so that a machine out of
// ports fails the test instead of spinning.
const maxPortAttempts = 100

// freePorts returns n distinct loopback ports that were free a moment ago.
// With bus set, each port is also low enough that port+clusterBusOffset is a
// valid port, and that port was free too.
//
// Every candidate stays bound until all n are chosen, so one call never
// returns the same port twice. They are released before returning, so a
// third party can still take one before redis-server binds it; callers
// detect that by the server exiting and retry with fresh ports.
func freePorts(n int, bus bool) ([]int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var ports []int
	for attempt := 0; len(ports) < n; attempt++ {
		if attempt == maxPortAttempts {
			return nil, errors.New("redistest: no free loopback ports found")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if bus {
			if port+clusterBusOffset > 65535 {
				continue
			}
			busL, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port + clusterBusOffset})
			if err != nil {
				continue
			}
			held = append(held, busL)
		}
		ports = append(ports, port)
	}
	return ports, nil
}
