-- Traffic through the router is activity (issue 35): the request counters of each router as the
-- last sweep read them (a JSON object, route → requests), to tell which routes moved since.
CREATE TABLE router_counters (
	router   TEXT NOT NULL PRIMARY KEY,
	counters TEXT NOT NULL
) STRICT;
