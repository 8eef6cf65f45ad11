//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// canTellPeers reports whether peerUID works here: /proc/net/tcp is
// readable.
func canTellPeers() bool {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// peerUID returns the user owning the TCP socket at the other end of a
// connection on this machine (local: our end, remote: theirs): the entry
// of /proc/net/tcp or tcp6 whose local address is their end and whose
// remote address is ours. Its uid column is the socket's owner.
func peerUID(local, remote net.Addr) (int, error) {
	l, lok := local.(*net.TCPAddr)
	r, rok := remote.(*net.TCPAddr)
	if !lok || !rok {
		return 0, errors.New("not a TCP connection")
	}
	for _, tab := range []struct {
		file string
		enc  func(*net.TCPAddr) (string, bool)
	}{{"/proc/net/tcp", procAddr4}, {"/proc/net/tcp6", procAddr6}} {
		theirs, ok1 := tab.enc(r)
		ours, ok2 := tab.enc(l)
		if !ok1 || !ok2 {
			continue
		}
		uid, found, err := findSocket(tab.file, theirs, ours)
		if err != nil {
			return 0, err
		}
		if found {
			return uid, nil
		}
	}
	return 0, fmt.Errorf("no socket of this machine has the address %s", remote)
}

// findSocket scans a /proc/net/tcp table for the socket with local
// address local and remote address remote (both as the table writes them).
func findSocket(file, local, remote string) (uid int, found bool, err error) {
	f, err := os.Open(file)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, false, nil // no IPv6 on this machine
		}
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1] != local || fs[2] != remote {
			continue
		}
		uid, err := strconv.Atoi(fs[7])
		if err != nil {
			return 0, false, fmt.Errorf("%s: bad uid %q", file, fs[7])
		}
		return uid, true, nil
	}
	return 0, false, sc.Err()
}

// procAddr4 writes an IPv4 address and port as /proc/net/tcp does: the
// address's four bytes as one host-order (little-endian) word in hex.
func procAddr4(a *net.TCPAddr) (string, bool) {
	ip := a.IP.To4()
	if ip == nil {
		return "", false
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port), true
}

// procAddr6 writes an address (IPv6, or IPv4 as ::ffff:a.b.c.d, as a
// dual-stack socket has it) and port as /proc/net/tcp6 does: four
// host-order words in hex.
func procAddr6(a *net.TCPAddr) (string, bool) {
	ip := a.IP.To16()
	if ip == nil {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(&b, "%02X%02X%02X%02X", ip[i+3], ip[i+2], ip[i+1], ip[i])
	}
	fmt.Fprintf(&b, ":%04X", a.Port)
	return b.String(), true
}
