"""The Squall UI: Storm UI's pages (cluster, topology with its graph, component, trace, dead letters) and actions, served by every supervisor.

:mod:`~service.ui.app` routes requests; :mod:`~service.ui.pages` renders the templates;
:mod:`~service.ui.graph` builds the topology graph; :mod:`~service.ui.security` holds the admin
token, sessions and CSRF checks. The pages read what the REST API reads
(:class:`service.query.live.LiveStatus`); the actions write the control topic through the same
functions as the verbs (:mod:`service.control.client`).
"""
