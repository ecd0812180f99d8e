from .base import ChartType, Chart
from .bars import BarChart, BoxAndWhiskerChart
from .pie import PieChart
from .planar import ScatterChart, LineChart
