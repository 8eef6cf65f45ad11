//go:build linux

package main

import (
	"net"
	"testing"
)

// The addresses as /proc/net/tcp and tcp6 write them.
func TestProcAddresses(t *testing.T) {
	for _, tc := range []struct {
		addr     *net.TCPAddr
		v4, v6   string
		v4IsNone bool
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}, "0100007F:2382", "0000000000000000FFFF00000100007F:2382", false},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 443}, "", "00000000000000000000000001000000:01BB", true},
	} {
		v4, ok := procAddr4(tc.addr)
		if ok == tc.v4IsNone || v4 != tc.v4 {
			t.Errorf("procAddr4(%s) = %q, %v; want %q", tc.addr, v4, ok, tc.v4)
		}
		if v6, _ := procAddr6(tc.addr); v6 != tc.v6 {
			t.Errorf("procAddr6(%s) = %q, want %q", tc.addr, v6, tc.v6)
		}
	}
}
