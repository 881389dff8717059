package mysql

import (
	"errors"
	"testing"
)

func TestCheckVersionString(t *testing.T) {
	for _, tc := range []struct {
		v  string
		ok bool
	}{
		{"8.0.36", true},
		{"8.0.13", true},
		{"8.0.12", false},
		{"8.0", false},
		{"8.1", true},
		{"8.4.0-commercial", true},
		{"9.1.0", true},
		{"5.7.44-log", false},
		{"10.11.19-MariaDB-0+deb12u1", true},
		{"10.6.0-MariaDB", true},
		{"10.5.23-MariaDB-log", false},
		{"5.5.5-10.4.1-MariaDB", false},
		{"5.5.5-10.6.12-MariaDB", true},
		{"11.4.2-MariaDB", true},
		{"garbage", false},
	} {
		err := checkVersionString(tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("checkVersionString(%q) = %v, want ok=%v", tc.v, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsupportedVersion) {
			t.Errorf("checkVersionString(%q) error %v is not ErrUnsupportedVersion", tc.v, err)
		}
	}
}
