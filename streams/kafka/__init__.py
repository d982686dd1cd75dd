"""Kafka mode: the topology, the worker, the log detector, the codec and the client.

Kafka mode: the Faust topology, the worker and its configuration, the log detector, the
prepared-batch codec, and the kafka-python client of the crawler and of event consumers.

Imported only by what runs on Kafka: the embedded mode never loads Faust.
"""
