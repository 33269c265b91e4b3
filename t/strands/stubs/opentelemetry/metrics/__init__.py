from .._noop import Noop


class Counter(Noop):
    pass


class Histogram(Noop):
    pass


class Meter(Noop):
    def create_counter(self, *args, **kwargs):
        return Counter()

    def create_histogram(self, *args, **kwargs):
        return Histogram()


class MeterProvider(Noop):
    def get_meter(self, *args, **kwargs):
        return Meter()


_provider = MeterProvider()


def get_meter_provider():
    return _provider


def set_meter_provider(provider):
    global _provider
    _provider = provider


def get_meter(*args, **kwargs):
    return _provider.get_meter()
