package main

import (
	_ "github.com/kobe/groupconc"
	_ "github.com/kobe/groupconc/adapt"
	_ "github.com/kobe/groupconc/grpcgc"
	_ "github.com/kobe/groupconc/httpgc"
	_ "github.com/kobe/groupconc/otelgc"
	_ "github.com/kobe/groupconc/promgc"
	_ "github.com/kobe/groupconc/redisgc"
)
