package rmqfake

import (
	"encoding/json"
	"strconv"
)

// Queue permissions (PermName): readable and writable.
const permReadWrite = 4 | 2

func (c *Cluster) serveNameServer(req *Command) *Command {
	if req.Code != CodeGetRouteInfo {
		return response(req, ResNotSupported, "rmqfake name server: request code "+strconv.Itoa(req.Code)+" not supported")
	}
	topic := req.ExtFields["topic"]
	if topic == "" {
		return response(req, ResSystemError, "rmqfake: GET_ROUTEINFO_BY_TOPIC without topic")
	}
	queues := c.store.ensureTopic(topic, c.opts.Queues)
	body, err := json.Marshal(routeData{
		QueueDatas: []queueData{{BrokerName: c.opts.BrokerName, ReadQueueNums: queues, WriteQueueNums: queues,
			Perm: permReadWrite}},
		BrokerDatas: []brokerData{{Cluster: "DefaultCluster", BrokerName: c.opts.BrokerName,
			BrokerAddrs: map[string]string{"0": c.Broker()}}},
	})
	if err != nil {
		return response(req, ResSystemError, err.Error())
	}
	resp := response(req, ResSuccess, "")
	resp.Body = body
	return resp
}

// routeData is TopicRouteData as the name server sends it. Broker id 0 is
// the master.
type routeData struct {
	OrderTopicConf string       `json:"orderTopicConf,omitempty"`
	QueueDatas     []queueData  `json:"queueDatas"`
	BrokerDatas    []brokerData `json:"brokerDatas"`
}

type queueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type brokerData struct {
	Cluster     string            `json:"cluster"`
	BrokerName  string            `json:"brokerName"`
	BrokerAddrs map[string]string `json:"brokerAddrs"`
}
