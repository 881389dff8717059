// Package drivers is the one list of the broker types and databases the
// herald binary ships: adding a broker or a database to the binary is one
// line here (and the adapter's own package, with its Driver). Package
// config reads files with whatever lists it is given (config.Drivers) and
// imports no adapter; a program that embeds Herald with fewer adapters
// passes its own lists and does not link the others. This package does not
// import config, so that config's tests can use the lists.
package drivers

import (
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/kafka"
	"github.com/heraldhq/herald/broker/kinesis"
	"github.com/heraldhq/herald/broker/mqtt"
	"github.com/heraldhq/herald/broker/nats"
	"github.com/heraldhq/herald/broker/natsembed"
	"github.com/heraldhq/herald/broker/pubsub"
	"github.com/heraldhq/herald/broker/rabbitmq"
	"github.com/heraldhq/herald/broker/redis"
	"github.com/heraldhq/herald/broker/rocketmq"
	"github.com/heraldhq/herald/broker/sns"
	"github.com/heraldhq/herald/broker/sqs"
	"github.com/heraldhq/herald/broker/stdout"
	"github.com/heraldhq/herald/broker/webhook"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql/binlog"
	"github.com/heraldhq/herald/store/postgres"
	"github.com/heraldhq/herald/store/sqlite"
)

// Brokers are the broker types the binary ships, one per `type`.
func Brokers() []broker.Driver {
	return []broker.Driver{
		nats.Driver{Embed: embedNATS},
		kafka.Driver{},
		rabbitmq.Driver{},
		redis.Driver{},
		rocketmq.Driver{},
		pubsub.Driver{},
		mqtt.Driver{},
		webhook.Driver{},
		stdout.Driver{},
		sqs.Driver{},
		sns.Driver{},
		kinesis.Driver{},
	}
}

// Stores are the databases the binary ships; the first is the default
// when `store.driver` is not set.
func Stores() []store.Driver {
	return []store.Driver{
		sqlite.Driver{},
		// mysql with log lanes from the binary log (it links vitess's
		// binlog client; mysql.Driver{} is the same store without them).
		binlog.Driver{},
		postgres.Driver{},
	}
}

// embedNATS starts the embedded NATS server of a nats entry's `embedded`
// block.
func embedNATS(c nats.EmbeddedConfig) (nats.EmbeddedServer, error) {
	srv, err := natsembed.Start(natsembed.Config{Dir: c.Dir, Host: c.Host, Port: c.Port, SyncAlways: c.SyncAlways})
	if err != nil {
		return nil, err
	}
	return srv, nil
}
