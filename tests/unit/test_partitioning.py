"""The publisher's partition choice must match Kafka's default partitioner."""

from aiokafka.partitioner import DefaultPartitioner

from loopwarden.streams.client.publisher import default_partition
from loopwarden.streams.runtime.app import broker_urls


def test_matches_aiokafka_default_partitioner():
    partitioner = DefaultPartitioner()
    partitions = list(range(8))
    for i in range(500):
        key = f"loop-{i}".encode()
        assert default_partition(key, 8) == partitioner(key, partitions, partitions)


def test_known_java_murmur2_value():
    # org.apache.kafka.common.utils.Utils.murmur2("21".getBytes()) == -973932308
    assert default_partition(b"21", 2**31 - 1) == (-973932308 & 0x7FFFFFFF) % (2**31 - 1)


def test_broker_urls():
    assert broker_urls("a:1, b:2") == ["kafka://a:1", "kafka://b:2"]
