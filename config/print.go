package config

import (
	"go.yaml.in/yaml/v3"
)

// Print returns the effective config (file over defaults, environment
// applied) as YAML, with every password, secret and credential in a URL or
// DSN replaced by xxxxx (each broker's through broker.Redactor), for
// `herald config print`.
func (f *File) Print() ([]byte, error) {
	c := *f
	c.Store.DSN = Redact(c.Store.DSN)
	if len(f.Stores) > 0 {
		c.Stores = make(map[string]*Store, len(f.Stores))
		for name, s := range f.Stores {
			if s != nil {
				r := *s
				r.DSN = Redact(r.DSN)
				s = &r
			}
			c.Stores[name] = s
		}
	}
	if c.Admin.Token != "" {
		c.Admin.Token = "xxxxx"
	}
	c.Brokers = make(map[string]*Broker, len(f.Brokers))
	for name, b := range f.Brokers {
		if b != nil {
			b = b.redacted()
		}
		c.Brokers[name] = b
	}
	if !f.noDefaultStore {
		return yaml.Marshal(&c)
	}
	// Without a default store the file has no `store` section to print.
	var n yaml.Node
	if err := n.Encode(&c); err != nil {
		return nil, err
	}
	if i := mappingIndex(&n, "store"); i >= 0 {
		n.Content = append(n.Content[:i], n.Content[i+2:]...)
	}
	return yaml.Marshal(&n)
}
