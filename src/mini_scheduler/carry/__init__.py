"""Disaster recovery that carries everything: the runtime schedules, the pauses and the waiting
firings follow the active region, each region keeping its own store.

* :mod:`.merge` decides, from what two stores hold, what to write in each (pure).
* :mod:`.carrier` reads the stores and writes it: after each active tick, and after an
  operator's action, so that each peer is at most a minute behind.
* :mod:`.takeover` makes a waiting firing that another region wrote run here once: taken over
  in that region's store before it is claimed here.
"""
