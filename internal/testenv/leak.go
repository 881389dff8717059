package testenv

import "go.uber.org/goleak"

// LeakOptions are the goleak options for a package that links the RocketMQ
// client (every package importing config does), vitess or the Google Cloud
// client: the client starts a cache
// janitor when it is loaded and leaves goroutines that sleep up to 10s after
// Shutdown. Nothing of ours may leak; these are not ours.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/patrickmn/go-cache.(*janitor).Run"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.1"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.2"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.3"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.(*rmqClient).Start.func1.4"),
		// The consumers' statistics sleep before they look at shutdown;
		// pulls in flight at Shutdown wait out their timeout (the client
		// closes the connection under them without failing them), like a
		// rebalance a broker's membership notice started.
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).Start.func1.2"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func4"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func5"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*statsItemSet).init.func6"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*pushConsumer).pullMessage"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/consumer.(*defaultPullConsumer).pullMessage"),
		goleak.IgnoreAnyFunction("github.com/apache/rocketmq-client-go/v2/internal.GetOrNewRocketMQClient.func1"),
		// glog (linked with vitess's binlog client, store/mysql/binlog)
		// starts its flush daemon when it is loaded.
		goleak.IgnoreTopFunction("github.com/golang/glog.(*fileSink).flushDaemon"),
		// The Google Cloud client (broker/pubsub): OpenCensus's worker
		// starts when it is loaded, gRPC's callback serializers end a
		// moment after their connection, and the streaming pull's
		// keep-alive returns at its next tick (up to 30s) after the pull.
		goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("cloud.google.com/go/pubsub/v2.(*messageIterator).streamKeepAliveHandler"),
	}
}
