package schedule

// Civil (proleptic Gregorian) calendar arithmetic on "wall seconds": a wall
// time read off a zone's clock, counted as if it were a UTC Unix time. Doing
// this with integers instead of time.Date keeps Next free of allocations and
// of time.Date's unspecified choice of offset for wall times that a zone skips
// or repeats; the zone is consulted only to turn wall seconds into instants.

const secondsPerDay = 86400

// floorDiv is a / b rounded towards negative infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// civil returns the year, month (1-12) and day (1-31) of a day counted from
// 1970-01-01. The algorithm is Howard Hinnant's civil_from_days.
func civil(days int64) (year int64, month, day int) {
	z := days + 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097                                  // [0, 146096]
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // [0, 399]
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // [0, 365]
	mp := (5*doy + 2) / 153                                // [0, 11], March-based
	day = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		month = int(mp + 3)
	} else {
		month = int(mp - 9)
	}
	year = yoe + era*400
	if month <= 2 {
		year++
	}
	return year, month, day
}

// weekday is the day of the week (0 = Sunday) of a day counted from
// 1970-01-01, which was a Thursday.
func weekday(days int64) int {
	return int(days - floorDiv(days+4, 7)*7 + 4)
}

func isLeap(year int64) bool {
	return year%4 == 0 && (year%100 != 0 || year%400 == 0)
}

// daysIn is the number of days in the month of the year.
func daysIn(year int64, month int) int {
	switch month {
	case 2:
		if isLeap(year) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
