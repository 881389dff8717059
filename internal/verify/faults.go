package verify

import (
	"slices"
	"sort"
	"strings"
)

// The faults verify injects, on its own processes and connections only.
const (
	faultKill            = "kill"             // SIGKILL a relay child, start another
	faultStop            = "stop"             // SIGSTOP a relay child past the lease, then SIGCONT
	faultCutBroker       = "cut-broker"       // close relays' broker connections, refuse new ones
	faultCutDB           = "cut-db"           // the same between relays and the database
	faultDelayBroker     = "delay-broker"     // delay every chunk relays ↔ broker
	faultDelayDB         = "delay-db"         // delay every chunk relays ↔ database
	faultBlackholeBroker = "blackhole-broker" // accept, forward nothing, relays ↔ broker
	faultBlackholeDB     = "blackhole-db"     // the same relays ↔ database
)

// The restarts run the user's command (--restart-broker-cmd,
// --restart-db-cmd): verify restarts nothing it did not start itself.
const (
	faultRestartBroker = "restart-broker"
	faultRestartDB     = "restart-db"
)

var allFaults = []string{faultKill, faultStop, faultCutBroker, faultCutDB, faultDelayBroker,
	faultDelayDB, faultBlackholeBroker, faultBlackholeDB}

// defaultFaults are what --faults default injects: crashes, freezes and
// cuts, the faults that cost other relays events.
var defaultFaults = []string{faultKill, faultStop, faultCutBroker, faultCutDB}

func faultNames() string { return strings.Join(allFaults, ", ") }

// parseFaults reads --faults: names, "default", "all" or "none".
func parseFaults(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "" || f == "none":
		case f == "default":
			out = append(out, defaultFaults...)
		case f == "all":
			out = append(out, allFaults...)
		case slices.Contains(allFaults, f), f == faultRestartBroker, f == faultRestartDB:
			out = append(out, f)
		default:
			return nil, invalidf("--faults: %q is not one of %s, %s, %s, default, all, none", f, faultNames(), faultRestartBroker, faultRestartDB)
		}
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

// withRestarts adds the restart faults whose command is given, and
// refuses one asked for without it.
func withRestarts(faults []string, brokerCmd, dbCmd string) ([]string, error) {
	for _, r := range []struct{ fault, cmd, flag string }{
		{faultRestartBroker, brokerCmd, "--restart-broker-cmd"},
		{faultRestartDB, dbCmd, "--restart-db-cmd"},
	} {
		asked := slices.Contains(faults, r.fault)
		switch {
		case asked && r.cmd == "":
			return nil, invalidf("--faults: %s needs %s, the command that restarts it", r.fault, r.flag)
		case !asked && r.cmd != "":
			faults = append(faults, r.fault)
		}
	}
	sort.Strings(faults)
	return faults, nil
}

// dbFault says whether f acts on the relays' database connections.
func dbFault(f string) bool { return strings.HasSuffix(f, "-db") && f != faultRestartDB }
