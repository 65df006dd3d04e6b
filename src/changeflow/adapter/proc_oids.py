"""The OIDs of the function table's functions in ``pg_proc``: PostgreSQL 15's own for the
functions it has (tools join on them, and they do not move when functions are added), a
stable OID derived from the name for any other.

``_PG15`` lists, for each name of the function table that PostgreSQL 15 has in
``pg_catalog``, each of its functions as ``OID name(argument types) | result | arguments |
result type OID | argument type OIDs`` (the argument types as ``regprocedure`` shows them, the
result and arguments as ``pg_get_function_result`` and ``pg_get_function_arguments`` do, ``=``
where those are the argument types); it is PostgreSQL's own, and a test compares it with a
running PostgreSQL. ``pg_proc`` lists each of them; a name with several functions (an
overload) stands, where one OID is wanted for the name, for its lowest.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

DERIVED = range(10000, 16384)  # OIDs PostgreSQL's built-in functions do not use (below user's)

_PG15 = """
1394 abs(real) | real | = | 700 | 700
1395 abs(double precision) | double precision | = | 701 | 701
1396 abs(bigint) | bigint | = | 20 | 20
1397 abs(integer) | integer | = | 23 | 23
1398 abs(smallint) | smallint | = | 21 | 21
1705 abs(numeric) | numeric | = | 1700 | 1700
1601 acos(double precision) | double precision | = | 701 | 701
1181 age(xid) | integer | = | 23 | 28
1199 age(timestamp with time zone,timestamp with time zone) | interval | = | 1186 | 1184 1184
1386 age(timestamp with time zone) | interval | = | 1186 | 1184
2058 age(timestamp without time zone,timestamp without time zone) | interval | = | 1186 | 1114 1114
2059 age(timestamp without time zone) | interval | = | 1186 | 1114
378 array_append(anycompatiblearray,anycompatible) | anycompatiblearray | = | 5078 | 5078 5077
383 array_cat(anycompatiblearray,anycompatiblearray) | anycompatiblearray | = | 5078 | 5078 5078
747 array_dims(anyarray) | text | = | 25 | 2277
1193 array_fill(anyelement,integer[]) | anyarray | = | 2277 | 2283 1007
1286 array_fill(anyelement,integer[],integer[]) | anyarray | = | 2277 | 2283 1007 1007
2176 array_length(anyarray,integer) | integer | = | 23 | 2277 23
3153 array_to_json(anyarray) | json | = | 114 | 2277
3154 array_to_json(anyarray,boolean) | json | = | 114 | 2277 16
2091 array_lower(anyarray,integer) | integer | = | 23 | 2277 23
748 array_ndims(anyarray) | integer | = | 23 | 2277
3277 array_position(anycompatiblearray,anycompatible) | integer | = | 23 | 5078 5077
3278 array_position(anycompatiblearray,anycompatible,integer) | integer | = | 23 | 5078 5077 23
3279 array_positions(anycompatiblearray,anycompatible) | integer[] | = | 1007 | 5078 5077
379 array_prepend(anycompatible,anycompatiblearray) | anycompatiblearray | = | 5078 | 5077 5078
3167 array_remove(anycompatiblearray,anycompatible) | anycompatiblearray | = | 5078 | 5078 5077
3168 array_replace(anycompatiblearray,anycompatible,anycompatible) | anycompatiblearray | = | 5078 | 5078 5077 5077
384 array_to_string(anyarray,text,text) | text | = | 25 | 2277 25 25
395 array_to_string(anyarray,text) | text | = | 25 | 2277 25
2092 array_upper(anyarray,integer) | integer | = | 23 | 2277 23
2749 arraycontained(anyarray,anyarray) | boolean | = | 16 | 2277 2277
2748 arraycontains(anyarray,anyarray) | boolean | = | 16 | 2277 2277
2747 arrayoverlap(anyarray,anyarray) | boolean | = | 16 | 2277 2277
1620 ascii(text) | integer | = | 23 | 25
1600 asin(double precision) | double precision | = | 701 | 701
2466 acosh(double precision) | double precision | = | 701 | 701
2465 asinh(double precision) | double precision | = | 701 | 701
2467 atanh(double precision) | double precision | = | 701 | 701
1602 atan(double precision) | double precision | = | 701 | 701
1603 atan2(double precision,double precision) | double precision | = | 701 | 701 701
1810 bit_length(bytea) | integer | = | 23 | 17
1811 bit_length(text) | integer | = | 23 | 25
1812 bit_length(bit) | integer | = | 23 | 1560
884 btrim(text,text) | text | = | 25 | 25 25
885 btrim(text) | text | = | 25 | 25
2015 btrim(bytea,bytea) | bytea | = | 17 | 17 17
2011 byteacat(bytea,bytea) | bytea | = | 17 | 17 17
2005 bytealike(bytea,bytea) | boolean | = | 16 | 17 17
3179 cardinality(anyarray) | integer | = | 23 | 2277
1345 cbrt(double precision) | double precision | = | 701 | 701
1711 ceil(numeric) | numeric | = | 1700 | 1700
2308 ceil(double precision) | double precision | = | 701 | 701
2167 ceiling(numeric) | numeric | = | 1700 | 1700
2320 ceiling(double precision) | double precision | = | 701 | 701
1372 char_length(character) | integer | = | 23 | 1042
1381 char_length(text) | integer | = | 23 | 25
1621 chr(integer) | text | = | 25 | 23
3058 concat("any") | text | VARIADIC "any" | 25 | 2276
3059 concat_ws(text,"any") | text | text, VARIADIC "any" | 25 | 25 2276
1714 convert_from(bytea,name) | text | = | 25 | 17 19
1717 convert_to(text,name) | bytea | = | 17 | 25 19
1605 cos(double precision) | double precision | = | 701 | 701
2463 cosh(double precision) | double precision | = | 701 | 701
1607 cot(double precision) | double precision | = | 701 | 701
1171 date_part(text,timestamp with time zone) | double precision | = | 701 | 25 1184
1172 date_part(text,interval) | double precision | = | 701 | 25 1186
1273 date_part(text,time with time zone) | double precision | = | 701 | 25 1266
1384 date_part(text,date) | double precision | = | 701 | 25 1082
1385 date_part(text,time without time zone) | double precision | = | 701 | 25 1083
2021 date_part(text,timestamp without time zone) | double precision | = | 701 | 25 1114
6177 date_bin(interval,timestamp without time zone,timestamp without time zone) | timestamp without time zone | = | 1114 | 1186 1114 1114
6178 date_bin(interval,timestamp with time zone,timestamp with time zone) | timestamp with time zone | = | 1184 | 1186 1184 1184
1217 date_trunc(text,timestamp with time zone) | timestamp with time zone | = | 1184 | 25 1184
1218 date_trunc(text,interval) | interval | = | 1186 | 25 1186
1284 date_trunc(text,timestamp with time zone,text) | timestamp with time zone | = | 1184 | 25 1184 25
2020 date_trunc(text,timestamp without time zone) | timestamp without time zone | = | 1114 | 25 1114
1947 decode(text,text) | bytea | = | 17 | 25 25
1608 degrees(double precision) | double precision | = | 701 | 701
1973 div(numeric,numeric) | numeric | = | 1700 | 1700 1700
1946 encode(bytea,text) | text | = | 25 | 17 25
1347 exp(double precision) | double precision | = | 701 | 701
1732 exp(numeric) | numeric | = | 1700 | 1700
6199 extract(text,date) | numeric | = | 1700 | 25 1082
6200 extract(text,time without time zone) | numeric | = | 1700 | 25 1083
6201 extract(text,time with time zone) | numeric | = | 1700 | 25 1266
6202 extract(text,timestamp without time zone) | numeric | = | 1700 | 25 1114
6203 extract(text,timestamp with time zone) | numeric | = | 1700 | 25 1184
6204 extract(text,interval) | numeric | = | 1700 | 25 1186
1376 factorial(bigint) | numeric | = | 1700 | 20
1712 floor(numeric) | numeric | = | 1700 | 1700
2309 floor(double precision) | double precision | = | 701 | 701
3539 format(text,"any") | text | text, VARIADIC "any" | 25 | 25 2276
3540 format(text) | text | = | 25 | 25
5045 gcd(bigint,bigint) | bigint | = | 20 | 20 20
5044 gcd(integer,integer) | integer | = | 23 | 23 23
5048 gcd(numeric,numeric) | numeric | = | 1700 | 1700 1700
723 get_bit(bytea,bigint) | integer | = | 23 | 17 20
3032 get_bit(bit,integer) | integer | = | 23 | 1560 23
721 get_byte(bytea,integer) | integer | = | 23 | 17 23
872 initcap(text) | text | = | 25 | 25
1373 isfinite(date) | boolean | = | 16 | 1082
1390 isfinite(interval) | boolean | = | 16 | 1186
1389 isfinite(timestamp with time zone) | boolean | = | 16 | 1184
2048 isfinite(timestamp without time zone) | boolean | = | 16 | 1114
3949 json_array_element(json,integer) | json | from_json json, element_index integer | 114 | 114 23
3950 json_array_element_text(json,integer) | text | from_json json, element_index integer | 25 | 114 23
3956 json_array_length(json) | integer | = | 23 | 114
3198 json_build_array("any") | json | VARIADIC "any" | 114 | 2276
3199 json_build_array() | json | = | 114 | 
3200 json_build_object("any") | json | VARIADIC "any" | 114 | 2276
3201 json_build_object() | json | = | 114 | 
3951 json_extract_path(json,text[]) | json | from_json json, VARIADIC path_elems text[] | 114 | 114 1009
3953 json_extract_path_text(json,text[]) | text | from_json json, VARIADIC path_elems text[] | 25 | 114 1009
3947 json_object_field(json,text) | json | from_json json, field_name text | 114 | 114 25
3948 json_object_field_text(json,text) | text | from_json json, field_name text | 25 | 114 25
3968 json_typeof(json) | text | = | 25 | 114
3202 json_object(text[]) | json | = | 114 | 1009
3203 json_object(text[],text[]) | json | = | 114 | 1009 1009
3261 json_strip_nulls(json) | json | = | 114 | 114
3263 jsonb_object(text[]) | jsonb | = | 3802 | 1009
3264 jsonb_object(text[],text[]) | jsonb | = | 3802 | 1009 1009
3215 jsonb_array_element(jsonb,integer) | jsonb | from_json jsonb, element_index integer | 3802 | 3802 23
3216 jsonb_array_element_text(jsonb,integer) | text | from_json jsonb, element_index integer | 25 | 3802 23
3207 jsonb_array_length(jsonb) | integer | = | 23 | 3802
3271 jsonb_build_array("any") | jsonb | VARIADIC "any" | 3802 | 2276
3272 jsonb_build_array() | jsonb | = | 3802 | 
3273 jsonb_build_object("any") | jsonb | VARIADIC "any" | 3802 | 2276
3274 jsonb_build_object() | jsonb | = | 3802 | 
3301 jsonb_concat(jsonb,jsonb) | jsonb | = | 3802 | 3802 3802
4050 jsonb_contained(jsonb,jsonb) | boolean | = | 16 | 3802 3802
4046 jsonb_contains(jsonb,jsonb) | boolean | = | 16 | 3802 3802
3302 jsonb_delete(jsonb,text) | jsonb | = | 3802 | 3802 25
3303 jsonb_delete(jsonb,integer) | jsonb | = | 3802 | 3802 23
3343 jsonb_delete(jsonb,text[]) | jsonb | from_json jsonb, VARIADIC path_elems text[] | 3802 | 3802 1009
3304 jsonb_delete_path(jsonb,text[]) | jsonb | = | 3802 | 3802 1009
4047 jsonb_exists(jsonb,text) | boolean | = | 16 | 3802 25
4049 jsonb_exists_all(jsonb,text[]) | boolean | = | 16 | 3802 1009
4048 jsonb_exists_any(jsonb,text[]) | boolean | = | 16 | 3802 1009
3217 jsonb_extract_path(jsonb,text[]) | jsonb | from_json jsonb, VARIADIC path_elems text[] | 3802 | 3802 1009
3940 jsonb_extract_path_text(jsonb,text[]) | text | from_json jsonb, VARIADIC path_elems text[] | 25 | 3802 1009
3579 jsonb_insert(jsonb,text[],jsonb,boolean) | jsonb | jsonb_in jsonb, path text[], replacement jsonb, insert_after boolean DEFAULT false | 3802 | 3802 1009 3802 16
3478 jsonb_object_field(jsonb,text) | jsonb | from_json jsonb, field_name text | 3802 | 3802 25
3214 jsonb_object_field_text(jsonb,text) | text | from_json jsonb, field_name text | 25 | 3802 25
4005 jsonb_path_exists(jsonb,jsonpath,jsonb,boolean) | boolean | target jsonb, path jsonpath, vars jsonb DEFAULT '{}'::jsonb, silent boolean DEFAULT false | 16 | 3802 4072 3802 16
4009 jsonb_path_match(jsonb,jsonpath,jsonb,boolean) | boolean | target jsonb, path jsonpath, vars jsonb DEFAULT '{}'::jsonb, silent boolean DEFAULT false | 16 | 3802 4072 3802 16
4007 jsonb_path_query_array(jsonb,jsonpath,jsonb,boolean) | jsonb | target jsonb, path jsonpath, vars jsonb DEFAULT '{}'::jsonb, silent boolean DEFAULT false | 3802 | 3802 4072 3802 16
4008 jsonb_path_query_first(jsonb,jsonpath,jsonb,boolean) | jsonb | target jsonb, path jsonpath, vars jsonb DEFAULT '{}'::jsonb, silent boolean DEFAULT false | 3802 | 3802 4072 3802 16
3306 jsonb_pretty(jsonb) | text | = | 25 | 3802
3305 jsonb_set(jsonb,text[],jsonb,boolean) | jsonb | jsonb_in jsonb, path text[], replacement jsonb, create_if_missing boolean DEFAULT true | 3802 | 3802 1009 3802 16
3262 jsonb_strip_nulls(jsonb) | jsonb | = | 3802 | 3802
3210 jsonb_typeof(jsonb) | text | = | 25 | 3802
1295 justify_days(interval) | interval | = | 1186 | 1186
1175 justify_hours(interval) | interval | = | 1186 | 1186
2711 justify_interval(interval) | interval | = | 1186 | 1186
5047 lcm(bigint,bigint) | bigint | = | 20 | 20 20
5046 lcm(integer,integer) | integer | = | 23 | 23 23
5049 lcm(numeric,numeric) | numeric | = | 1700 | 1700 1700
3060 left(text,integer) | text | = | 25 | 25 23
1317 length(text) | integer | = | 23 | 25
1318 length(character) | integer | = | 23 | 1042
1530 length(lseg) | double precision | = | 701 | 601
1531 length(path) | double precision | = | 701 | 602
1681 length(bit) | integer | = | 23 | 1560
1713 length(bytea,name) | integer | = | 23 | 17 19
2010 length(bytea) | integer | = | 23 | 17
3711 length(tsvector) | integer | = | 23 | 3614
1637 like_escape(text,text) | text | = | 25 | 25 25
2009 like_escape(bytea,bytea) | bytea | = | 17 | 17 17
1341 ln(double precision) | double precision | = | 701 | 701
1734 ln(numeric) | numeric | = | 1700 | 1700
1340 log(double precision) | double precision | = | 701 | 701
1736 log(numeric,numeric) | numeric | = | 1700 | 1700 1700
1741 log(numeric) | numeric | = | 1700 | 1700
870 lower(text) | text | = | 25 | 25
3848 lower(anyrange) | anyelement | = | 2283 | 3831
4235 lower(anymultirange) | anyelement | = | 2283 | 4537
873 lpad(text,integer,text) | text | = | 25 | 25 23 25
879 lpad(text,integer) | text | = | 25 | 25 23
875 ltrim(text,text) | text | = | 25 | 25 25
881 ltrim(text) | text | = | 25 | 25
6195 ltrim(bytea,bytea) | bytea | = | 17 | 17 17
3846 make_date(integer,integer,integer) | date | year integer, month integer, day integer | 1082 | 23 23 23
3464 make_interval(integer,integer,integer,integer,integer,integer,double precision) | interval | years integer DEFAULT 0, months integer DEFAULT 0, weeks integer DEFAULT 0, days integer DEFAULT 0, hours integer DEFAULT 0, mins integer DEFAULT 0, secs double precision DEFAULT 0.0 | 1186 | 23 23 23 23 23 23 701
3847 make_time(integer,integer,double precision) | time without time zone | hour integer, min integer, sec double precision | 1083 | 23 23 701
3461 make_timestamp(integer,integer,integer,integer,integer,double precision) | timestamp without time zone | year integer, month integer, mday integer, hour integer, min integer, sec double precision | 1114 | 23 23 23 23 23 701
3462 make_timestamptz(integer,integer,integer,integer,integer,double precision) | timestamp with time zone | year integer, month integer, mday integer, hour integer, min integer, sec double precision | 1184 | 23 23 23 23 23 701
3463 make_timestamptz(integer,integer,integer,integer,integer,double precision,text) | timestamp with time zone | year integer, month integer, mday integer, hour integer, min integer, sec double precision, timezone text | 1184 | 23 23 23 23 23 701 25
2311 md5(text) | text | = | 25 | 25
2321 md5(bytea) | text | = | 25 | 17
5042 min_scale(numeric) | integer | = | 23 | 1700
440 num_nonnulls("any") | integer | VARIADIC "any" | 23 | 2276
438 num_nulls("any") | integer | VARIADIC "any" | 23 | 2276
720 octet_length(bytea) | integer | = | 23 | 17
1374 octet_length(text) | integer | = | 23 | 25
1375 octet_length(character) | integer | = | 23 | 1042
1682 octet_length(bit) | integer | = | 23 | 1560
1619 pg_typeof("any") | regtype | = | 2206 | 2276
1610 pi() | double precision | = | 701 | 
849 position(text,text) | integer | = | 23 | 25 25
1698 position(bit,bit) | integer | = | 23 | 1560 1560
2014 position(bytea,bytea) | integer | = | 23 | 17 17
1346 pow(double precision,double precision) | double precision | = | 701 | 701 701
1738 pow(numeric,numeric) | numeric | = | 1700 | 1700 1700
1368 power(double precision,double precision) | double precision | = | 701 | 701 701
2169 power(numeric,numeric) | numeric | = | 1700 | 1700 1700
1282 quote_ident(text) | text | = | 25 | 25
1283 quote_literal(text) | text | = | 25 | 25
1285 quote_literal(anyelement) | text | = | 25 | 2283
1289 quote_nullable(text) | text | = | 25 | 25
1290 quote_nullable(anyelement) | text | = | 25 | 2283
1609 radians(double precision) | double precision | = | 701 | 701
6263 regexp_like(text,text) | boolean | = | 16 | 25 25
6264 regexp_like(text,text,text) | boolean | = | 16 | 25 25 25
6254 regexp_count(text,text) | integer | = | 23 | 25 25
6255 regexp_count(text,text,integer) | integer | = | 23 | 25 25 23
6256 regexp_count(text,text,integer,text) | integer | = | 23 | 25 25 23 25
6257 regexp_instr(text,text) | integer | = | 23 | 25 25
6258 regexp_instr(text,text,integer) | integer | = | 23 | 25 25 23
6259 regexp_instr(text,text,integer,integer) | integer | = | 23 | 25 25 23 23
6260 regexp_instr(text,text,integer,integer,integer) | integer | = | 23 | 25 25 23 23 23
6261 regexp_instr(text,text,integer,integer,integer,text) | integer | = | 23 | 25 25 23 23 23 25
6262 regexp_instr(text,text,integer,integer,integer,text,integer) | integer | = | 23 | 25 25 23 23 23 25 23
6265 regexp_substr(text,text) | text | = | 25 | 25 25
6266 regexp_substr(text,text,integer) | text | = | 25 | 25 25 23
6267 regexp_substr(text,text,integer,integer) | text | = | 25 | 25 25 23 23
6268 regexp_substr(text,text,integer,integer,text) | text | = | 25 | 25 25 23 23 25
6269 regexp_substr(text,text,integer,integer,text,integer) | text | = | 25 | 25 25 23 23 25 23
3396 regexp_match(text,text) | text[] | = | 1009 | 25 25
3397 regexp_match(text,text,text) | text[] | = | 1009 | 25 25 25
2284 regexp_replace(text,text,text) | text | = | 25 | 25 25 25
2285 regexp_replace(text,text,text,text) | text | = | 25 | 25 25 25 25
6251 regexp_replace(text,text,text,integer,integer,text) | text | = | 25 | 25 25 25 23 23 25
6252 regexp_replace(text,text,text,integer,integer) | text | = | 25 | 25 25 25 23 23
6253 regexp_replace(text,text,text,integer) | text | = | 25 | 25 25 25 23
2767 regexp_split_to_array(text,text) | text[] | = | 1009 | 25 25
2768 regexp_split_to_array(text,text,text) | text[] | = | 1009 | 25 25 25
1622 repeat(text,integer) | text | = | 25 | 25 23
2087 replace(text,text,text) | text | = | 25 | 25 25 25
3062 reverse(text) | text | = | 25 | 25
3061 right(text,integer) | text | = | 25 | 25 23
1342 round(double precision) | double precision | = | 701 | 701
1707 round(numeric,integer) | numeric | = | 1700 | 1700 23
1708 round(numeric) | numeric | = | 1700 | 1700
874 rpad(text,integer,text) | text | = | 25 | 25 23 25
880 rpad(text,integer) | text | = | 25 | 25 23
876 rtrim(text,text) | text | = | 25 | 25 25
882 rtrim(text) | text | = | 25 | 25
6196 rtrim(bytea,bytea) | bytea | = | 17 | 17 17
3281 scale(numeric) | integer | = | 23 | 1700
724 set_bit(bytea,bigint,integer) | bytea | = | 17 | 17 20 23
3033 set_bit(bit,integer,integer) | bit | = | 1560 | 1560 23 23
722 set_byte(bytea,integer,integer) | bytea | = | 17 | 17 23 23
3419 sha224(bytea) | bytea | = | 17 | 17
3420 sha256(bytea) | bytea | = | 17 | 17
3421 sha384(bytea) | bytea | = | 17 | 17
3422 sha512(bytea) | bytea | = | 17 | 17
1706 sign(numeric) | numeric | = | 1700 | 1700
2310 sign(double precision) | double precision | = | 701 | 701
1986 similar_to_escape(text,text) | text | = | 25 | 25 25
1987 similar_to_escape(text) | text | = | 25 | 25
1604 sin(double precision) | double precision | = | 701 | 701
2462 sinh(double precision) | double precision | = | 701 | 701
2088 split_part(text,text,integer) | text | = | 25 | 25 25 23
1344 sqrt(double precision) | double precision | = | 701 | 701
1730 sqrt(numeric) | numeric | = | 1700 | 1700
3696 starts_with(text,text) | boolean | = | 16 | 25 25
376 string_to_array(text,text,text) | text[] | = | 1009 | 25 25 25
394 string_to_array(text,text) | text[] | = | 1009 | 25 25
868 strpos(text,text) | integer | = | 23 | 25 25
877 substr(text,integer,integer) | text | = | 25 | 25 23 23
883 substr(text,integer) | text | = | 25 | 25 23
2085 substr(bytea,integer,integer) | bytea | = | 17 | 17 23 23
2086 substr(bytea,integer) | bytea | = | 17 | 17 23
936 substring(text,integer,integer) | text | = | 25 | 25 23 23
937 substring(text,integer) | text | = | 25 | 25 23
1680 substring(bit,integer,integer) | bit | = | 1560 | 1560 23 23
1699 substring(bit,integer) | bit | = | 1560 | 1560 23
2012 substring(bytea,integer,integer) | bytea | = | 17 | 17 23 23
2013 substring(bytea,integer) | bytea | = | 17 | 17 23
2073 substring(text,text) | text | = | 25 | 25 25
2074 substring(text,text,text) | text | = | 25 | 25 25 25
1606 tan(double precision) | double precision | = | 701 | 701
2464 tanh(double precision) | double precision | = | 701 | 701
1258 textcat(text,text) | text | = | 25 | 25 25
1026 timezone(interval,timestamp with time zone) | timestamp without time zone | = | 1114 | 1186 1184
1159 timezone(text,timestamp with time zone) | timestamp without time zone | = | 1114 | 25 1184
2037 timezone(text,time with time zone) | time with time zone | = | 1266 | 25 1266
2038 timezone(interval,time with time zone) | time with time zone | = | 1266 | 1186 1266
2069 timezone(text,timestamp without time zone) | timestamp with time zone | = | 1184 | 25 1114
2070 timezone(interval,timestamp without time zone) | timestamp with time zone | = | 1184 | 1186 1114
1768 to_char(interval,text) | text | = | 25 | 1186 25
1770 to_char(timestamp with time zone,text) | text | = | 25 | 1184 25
1772 to_char(numeric,text) | text | = | 25 | 1700 25
1773 to_char(integer,text) | text | = | 25 | 23 25
1774 to_char(bigint,text) | text | = | 25 | 20 25
1775 to_char(real,text) | text | = | 25 | 700 25
1776 to_char(double precision,text) | text | = | 25 | 701 25
2049 to_char(timestamp without time zone,text) | text | = | 25 | 1114 25
1780 to_date(text,text) | date | = | 1082 | 25 25
2089 to_hex(integer) | text | = | 25 | 23
2090 to_hex(bigint) | text | = | 25 | 20
3176 to_json(anyelement) | json | = | 114 | 2283
3787 to_jsonb(anyelement) | jsonb | = | 3802 | 2283
1777 to_number(text,text) | numeric | = | 1700 | 25 25
1158 to_timestamp(double precision) | timestamp with time zone | = | 1184 | 701
1778 to_timestamp(text,text) | timestamp with time zone | = | 1184 | 25 25
878 translate(text,text,text) | text | = | 25 | 25 25 25
6172 trim_array(anyarray,integer) | anyarray | = | 2277 | 2277 23
5043 trim_scale(numeric) | numeric | = | 1700 | 1700
753 trunc(macaddr) | macaddr | = | 829 | 829
1343 trunc(double precision) | double precision | = | 701 | 701
1709 trunc(numeric,integer) | numeric | = | 1700 | 1700 23
1710 trunc(numeric) | numeric | = | 1700 | 1700
4112 trunc(macaddr8) | macaddr8 | = | 774 | 774
871 upper(text) | text | = | 25 | 25
3849 upper(anyrange) | anyelement | = | 2283 | 3831
4236 upper(anymultirange) | anyelement | = | 2283 | 4537
320 width_bucket(double precision,double precision,double precision,integer) | integer | = | 23 | 701 701 701 23
2170 width_bucket(numeric,numeric,numeric,integer) | integer | = | 23 | 1700 1700 1700 23
3218 width_bucket(anycompatible,anycompatiblearray) | integer | = | 23 | 5077 5078
"""  # noqa: E501
_ROWS = [line.split(" | ") for line in _PG15.strip().splitlines()]
SIGNATURES: dict[str, int] = {
    head.split(" ", 1)[1]: int(head.split(" ", 1)[0]) for head, *_ in _ROWS
}


@dataclass(frozen=True)
class Proc:
    """What pg_proc and psql's ``\\df`` show of one of PostgreSQL's functions."""

    result: str  # pg_get_function_result
    arguments: str  # pg_get_function_arguments
    rettype: int
    argtypes: str  # proargtypes: the argument types' OIDs, space-separated


def _procs() -> dict[int, Proc]:
    out = {}
    for head, result, arguments, rettype, argtypes in _ROWS:
        oid, sig = head.split(" ", 1)
        shown = sig[sig.index("(") + 1 : -1].replace(",", ", ") if arguments == "=" else arguments
        out[int(oid)] = Proc(result, shown, int(rettype), argtypes)
    return out


PROCS = _procs()  # by OID


def _lowest() -> dict[str, int]:
    out: dict[str, int] = {}
    for sig, oid in SIGNATURES.items():
        name = sig.split("(", 1)[0]
        out[name] = min(oid, out.get(name, oid))
    return out


PG_OIDS = _lowest()  # the OID a name stands for: the lowest of its functions'
# the names of which PostgreSQL 15 has several functions: a regproc of one is ambiguous there
# (42725), a regprocedure names its arguments
OVERLOADED = frozenset(
    name for name in PG_OIDS if sum(s.startswith(f"{name}(") for s in SIGNATURES) > 1
)


def proc_oid(name: str) -> int:
    """The ``pg_proc`` OID of the function table's ``name``: PostgreSQL's (the lowest of an
    overloaded name's), else one derived from the name alone (so no other function's
    addition moves it)."""
    oid = PG_OIDS.get(name)
    if oid is not None:
        return oid
    return DERIVED.start + zlib.crc32(name.encode()) % len(DERIVED)


def proc_rows(namespace: int, owner: int) -> list[tuple[Any, ...]]:
    """``pg_proc``'s rows: each of PostgreSQL's functions of the function table's names (every
    overload, with its argument and result types), one row for a name PostgreSQL has not."""
    from changeflow.adapter.object_ids import function_oids
    from changeflow.compute.functions import FUNCTIONS

    rows: list[tuple[Any, ...]] = []
    for name, oid in function_oids().items():
        strict = FUNCTIONS[name].strict
        oids = [o for sig, o in SIGNATURES.items() if sig.split("(", 1)[0] == name] or [oid]
        for o in sorted(oids):
            shown = PROCS.get(o)
            types = (len(shown.argtypes.split()), shown.rettype, shown.argtypes) if shown else ()
            head = (o, name, namespace, owner, 12, "f", strict, False, "i")
            rows.append((*head, *(types or (-1, 0, "")), name, "s", False, None))
    return rows
