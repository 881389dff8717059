package relay

import (
	"slices"
	"testing"
)

// BenchmarkFairTenantsBigAlone measures what a fair lane costs a tenant
// that is alone in the lane: rounds of a plain and a fair lane (alternated,
// so that the machine's noise hits both, the first of each round
// alternating) each draining a fresh backlog of
// one tenant, on MariaDB and PostgreSQL. It reports both medians in
// events/s, their ratio (fair/plain) and the median of the rounds' own
// ratios (round-ratio: each round's two drains ran back to back, so the
// machine's slower spells weigh on both); b.N is not used, run it with
// -benchtime=1x.
func BenchmarkFairTenantsBigAlone(b *testing.B) {
	const rounds, backlog = 9, 20_000
	for _, d := range []serverStore{onMySQL, onPostgres} {
		b.Run(d.name, func(b *testing.B) {
			var plain, fair, ratios []float64
			for r := range rounds {
				// Which goes first alternates too: each run leaves the
				// server work (dead rows of its dropped table, WAL to
				// checkpoint) that the next one meets.
				for _, f := range []bool{r%2 == 1, r%2 == 0} {
					e := newFairEnv(b, d)
					e.enqueueBacklog("big", backlog)
					r := measureFair(b, e, f, 0)
					if f {
						fair = append(fair, r.rate())
					} else {
						plain = append(plain, r.rate())
					}
				}
			}
			for i := range plain {
				ratios = append(ratios, fair[i]/plain[i])
			}
			b.ReportMetric(median(ratios), "round-ratio")
			mp, mf := median(plain), median(fair)
			b.ReportMetric(mp, "plain-events/s")
			b.ReportMetric(mf, "fair-events/s")
			b.ReportMetric(mf/mp, "fair/plain")
			b.Logf("%s: plain %v, fair %v events/s", d.name, plain, fair)
		})
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
