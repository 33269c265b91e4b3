from ..._noop import Noop


class ConsoleMetricExporter(Noop):
    pass


class PeriodicExportingMetricReader(Noop):
    pass
