//go:build !linux

package main

import (
	"errors"
	"net"
)

// canTellPeers: only Linux says which user owns a TCP socket (owner.go).
func canTellPeers() bool { return false }

func peerUID(local, remote net.Addr) (int, error) {
	return 0, errors.New("not supported on this system")
}
