"""PostgreSQL 15's run-time parameters, as facts, one a line: name (as PostgreSQL spells it),
type, base unit, context (who may change it, and when), category, minimum, maximum, the value
it starts with (in its base unit) and, for an enum, its values. :mod:`changeflow.adapter.settings`
reads them from here."""

# ruff: noqa: E501

TABLE = """\
allow_in_place_tablespaces|bool||superuser|Developer Options|||off|
allow_system_table_mods|bool||superuser|Developer Options|||off|
application_name|string||user|Reporting and Logging / What to Log||||
archive_cleanup_command|string||sighup|Write-Ahead Log / Archive Recovery||||
archive_command|string||sighup|Write-Ahead Log / Archiving||||
archive_library|string||sighup|Write-Ahead Log / Archiving||||
archive_mode|enum||postmaster|Write-Ahead Log / Archiving|||off|always,on,off
archive_timeout|integer|s|sighup|Write-Ahead Log / Archiving|0|1073741823|0|
array_nulls|bool||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||on|
authentication_timeout|integer|s|sighup|Connections and Authentication / Authentication|1|600|60|
autovacuum|bool||sighup|Autovacuum|||on|
autovacuum_analyze_scale_factor|real||sighup|Autovacuum|0|100|0.1|
autovacuum_analyze_threshold|integer||sighup|Autovacuum|0|2147483647|50|
autovacuum_freeze_max_age|integer||postmaster|Autovacuum|100000|2000000000|200000000|
autovacuum_max_workers|integer||postmaster|Autovacuum|1|262143|3|
autovacuum_multixact_freeze_max_age|integer||postmaster|Autovacuum|10000|2000000000|400000000|
autovacuum_naptime|integer|s|sighup|Autovacuum|1|2147483|60|
autovacuum_vacuum_cost_delay|real|ms|sighup|Autovacuum|-1|100|2|
autovacuum_vacuum_cost_limit|integer||sighup|Autovacuum|-1|10000|-1|
autovacuum_vacuum_insert_scale_factor|real||sighup|Autovacuum|0|100|0.2|
autovacuum_vacuum_insert_threshold|integer||sighup|Autovacuum|-1|2147483647|1000|
autovacuum_vacuum_scale_factor|real||sighup|Autovacuum|0|100|0.2|
autovacuum_vacuum_threshold|integer||sighup|Autovacuum|0|2147483647|50|
autovacuum_work_mem|integer|kB|sighup|Resource Usage / Memory|-1|2147483647|-1|
backend_flush_after|integer|8kB|user|Resource Usage / Asynchronous Behavior|0|256|0|
backslash_quote|enum||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||safe_encoding|safe_encoding,on,off
backtrace_functions|string||superuser|Developer Options||||
bgwriter_delay|integer|ms|sighup|Resource Usage / Background Writer|10|10000|200|
bgwriter_flush_after|integer|8kB|sighup|Resource Usage / Background Writer|0|256|64|
bgwriter_lru_maxpages|integer||sighup|Resource Usage / Background Writer|0|1073741823|100|
bgwriter_lru_multiplier|real||sighup|Resource Usage / Background Writer|0|10|2|
block_size|integer||internal|Preset Options|8192|8192|8192|
bonjour|bool||postmaster|Connections and Authentication / Connection Settings|||off|
bonjour_name|string||postmaster|Connections and Authentication / Connection Settings||||
bytea_output|enum||user|Client Connection Defaults / Statement Behavior|||hex|escape,hex
check_function_bodies|bool||user|Client Connection Defaults / Statement Behavior|||on|
checkpoint_completion_target|real||sighup|Write-Ahead Log / Checkpoints|0|1|0.9|
checkpoint_flush_after|integer|8kB|sighup|Write-Ahead Log / Checkpoints|0|256|32|
checkpoint_timeout|integer|s|sighup|Write-Ahead Log / Checkpoints|30|86400|300|
checkpoint_warning|integer|s|sighup|Write-Ahead Log / Checkpoints|0|2147483647|30|
client_connection_check_interval|integer|ms|user|Connections and Authentication / Connection Settings|0|2147483647|0|
client_encoding|string||user|Client Connection Defaults / Locale and Formatting|||SQL_ASCII|
client_min_messages|enum||user|Client Connection Defaults / Statement Behavior|||notice|debug5,debug4,debug3,debug2,debug1,log,notice,warning,error
cluster_name|string||postmaster|Reporting and Logging / Process Title||||
commit_delay|integer||superuser|Write-Ahead Log / Settings|0|100000|0|
commit_siblings|integer||user|Write-Ahead Log / Settings|0|1000|5|
compute_query_id|enum||superuser|Statistics / Monitoring|||auto|auto,regress,on,off
config_file|string||postmaster|File Locations||||
constraint_exclusion|enum||user|Query Tuning / Other Planner Options|||partition|partition,on,off
cpu_index_tuple_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|0.005|
cpu_operator_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|0.0025|
cpu_tuple_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|0.01|
cursor_tuple_fraction|real||user|Query Tuning / Other Planner Options|0|1|0.1|
data_checksums|bool||internal|Preset Options|||off|
data_directory|string||postmaster|File Locations||||
data_directory_mode|integer||internal|Preset Options|0|511|448|
data_sync_retry|bool||postmaster|Error Handling|||off|
DateStyle|string||user|Client Connection Defaults / Locale and Formatting|||ISO, MDY|
db_user_namespace|bool||sighup|Connections and Authentication / Authentication|||off|
deadlock_timeout|integer|ms|superuser|Lock Management|1|2147483647|1000|
debug_assertions|bool||internal|Preset Options|||off|
debug_discard_caches|integer||superuser|Developer Options|0|0|0|
debug_pretty_print|bool||user|Reporting and Logging / What to Log|||on|
debug_print_parse|bool||user|Reporting and Logging / What to Log|||off|
debug_print_plan|bool||user|Reporting and Logging / What to Log|||off|
debug_print_rewritten|bool||user|Reporting and Logging / What to Log|||off|
default_statistics_target|integer||user|Query Tuning / Other Planner Options|1|10000|100|
default_table_access_method|string||user|Client Connection Defaults / Statement Behavior|||heap|
default_tablespace|string||user|Client Connection Defaults / Statement Behavior||||
default_text_search_config|string||user|Client Connection Defaults / Locale and Formatting|||pg_catalog.simple|
default_toast_compression|enum||user|Client Connection Defaults / Statement Behavior|||pglz|pglz,lz4
default_transaction_deferrable|bool||user|Client Connection Defaults / Statement Behavior|||off|
default_transaction_isolation|enum||user|Client Connection Defaults / Statement Behavior|||read committed|serializable,repeatable read,read committed,read uncommitted
default_transaction_read_only|bool||user|Client Connection Defaults / Statement Behavior|||off|
dynamic_library_path|string||superuser|Client Connection Defaults / Other Defaults|||$libdir|
dynamic_shared_memory_type|enum||postmaster|Resource Usage / Memory|||posix|posix,sysv,mmap
effective_cache_size|integer|8kB|user|Query Tuning / Planner Cost Constants|1|2147483647|524288|
effective_io_concurrency|integer||user|Resource Usage / Asynchronous Behavior|0|1000|1|
enable_async_append|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_bitmapscan|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_gathermerge|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_hashagg|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_hashjoin|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_incremental_sort|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_indexonlyscan|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_indexscan|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_material|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_memoize|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_mergejoin|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_nestloop|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_parallel_append|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_parallel_hash|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_partition_pruning|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_partitionwise_aggregate|bool||user|Query Tuning / Planner Method Configuration|||off|
enable_partitionwise_join|bool||user|Query Tuning / Planner Method Configuration|||off|
enable_seqscan|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_sort|bool||user|Query Tuning / Planner Method Configuration|||on|
enable_tidscan|bool||user|Query Tuning / Planner Method Configuration|||on|
escape_string_warning|bool||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||on|
event_source|string||postmaster|Reporting and Logging / Where to Log|||PostgreSQL|
exit_on_error|bool||user|Error Handling|||off|
extension_destdir|string||superuser|File Locations||||
external_pid_file|string||postmaster|File Locations||||
extra_float_digits|integer||user|Client Connection Defaults / Locale and Formatting|-15|3|1|
force_parallel_mode|enum||user|Developer Options|||off|off,on,regress
from_collapse_limit|integer||user|Query Tuning / Other Planner Options|1|2147483647|8|
fsync|bool||sighup|Write-Ahead Log / Settings|||on|
full_page_writes|bool||sighup|Write-Ahead Log / Settings|||on|
geqo|bool||user|Query Tuning / Genetic Query Optimizer|||on|
geqo_effort|integer||user|Query Tuning / Genetic Query Optimizer|1|10|5|
geqo_generations|integer||user|Query Tuning / Genetic Query Optimizer|0|2147483647|0|
geqo_pool_size|integer||user|Query Tuning / Genetic Query Optimizer|0|2147483647|0|
geqo_seed|real||user|Query Tuning / Genetic Query Optimizer|0|1|0|
geqo_selection_bias|real||user|Query Tuning / Genetic Query Optimizer|1.5|2|2|
geqo_threshold|integer||user|Query Tuning / Genetic Query Optimizer|2|2147483647|12|
gin_fuzzy_search_limit|integer||user|Client Connection Defaults / Other Defaults|0|2147483647|0|
gin_pending_list_limit|integer|kB|user|Client Connection Defaults / Statement Behavior|64|2147483647|4096|
hash_mem_multiplier|real||user|Resource Usage / Memory|1|1000|2|
hba_file|string||postmaster|File Locations||||
hot_standby|bool||postmaster|Replication / Standby Servers|||on|
hot_standby_feedback|bool||sighup|Replication / Standby Servers|||off|
huge_page_size|integer|kB|postmaster|Resource Usage / Memory|0|2147483647|0|
huge_pages|enum||postmaster|Resource Usage / Memory|||try|off,on,try
ident_file|string||postmaster|File Locations||||
idle_in_transaction_session_timeout|integer|ms|user|Client Connection Defaults / Statement Behavior|0|2147483647|0|
idle_session_timeout|integer|ms|user|Client Connection Defaults / Statement Behavior|0|2147483647|0|
ignore_checksum_failure|bool||superuser|Developer Options|||off|
ignore_invalid_pages|bool||postmaster|Developer Options|||off|
ignore_system_indexes|bool||backend|Developer Options|||off|
in_hot_standby|bool||internal|Preset Options|||off|
integer_datetimes|bool||internal|Preset Options|||on|
IntervalStyle|enum||user|Client Connection Defaults / Locale and Formatting|||postgres|postgres,postgres_verbose,sql_standard,iso_8601
jit|bool||user|Query Tuning / Other Planner Options|||on|
jit_above_cost|real||user|Query Tuning / Planner Cost Constants|-1|1.79769e+308|100000|
jit_debugging_support|bool||superuser-backend|Developer Options|||off|
jit_dump_bitcode|bool||superuser|Developer Options|||off|
jit_expressions|bool||user|Developer Options|||on|
jit_inline_above_cost|real||user|Query Tuning / Planner Cost Constants|-1|1.79769e+308|500000|
jit_optimize_above_cost|real||user|Query Tuning / Planner Cost Constants|-1|1.79769e+308|500000|
jit_profiling_support|bool||superuser-backend|Developer Options|||off|
jit_provider|string||postmaster|Client Connection Defaults / Shared Library Preloading|||llvmjit|
jit_tuple_deforming|bool||user|Developer Options|||on|
join_collapse_limit|integer||user|Query Tuning / Other Planner Options|1|2147483647|8|
krb_caseins_users|bool||sighup|Connections and Authentication / Authentication|||off|
krb_server_keyfile|string||sighup|Connections and Authentication / Authentication|||FILE:/etc/postgresql-common/krb5.keytab|
lc_collate|string||internal|Preset Options|||C|
lc_ctype|string||internal|Preset Options|||C|
lc_messages|string||superuser|Client Connection Defaults / Locale and Formatting||||
lc_monetary|string||user|Client Connection Defaults / Locale and Formatting|||C|
lc_numeric|string||user|Client Connection Defaults / Locale and Formatting|||C|
lc_time|string||user|Client Connection Defaults / Locale and Formatting|||C|
listen_addresses|string||postmaster|Connections and Authentication / Connection Settings|||localhost|
lo_compat_privileges|bool||superuser|Version and Platform Compatibility / Previous PostgreSQL Versions|||off|
local_preload_libraries|string||user|Client Connection Defaults / Shared Library Preloading||||
lock_timeout|integer|ms|user|Client Connection Defaults / Statement Behavior|0|2147483647|0|
log_autovacuum_min_duration|integer|ms|sighup|Reporting and Logging / What to Log|-1|2147483647|600000|
log_checkpoints|bool||sighup|Reporting and Logging / What to Log|||on|
log_connections|bool||superuser-backend|Reporting and Logging / What to Log|||off|
log_destination|string||sighup|Reporting and Logging / Where to Log|||stderr|
log_directory|string||sighup|Reporting and Logging / Where to Log|||log|
log_disconnections|bool||superuser-backend|Reporting and Logging / What to Log|||off|
log_duration|bool||superuser|Reporting and Logging / What to Log|||off|
log_error_verbosity|enum||superuser|Reporting and Logging / What to Log|||default|terse,default,verbose
log_executor_stats|bool||superuser|Statistics / Monitoring|||off|
log_file_mode|integer||sighup|Reporting and Logging / Where to Log|0|511|384|
log_filename|string||sighup|Reporting and Logging / Where to Log|||postgresql-%Y-%m-%d_%H%M%S.log|
log_hostname|bool||sighup|Reporting and Logging / What to Log|||off|
log_line_prefix|string||sighup|Reporting and Logging / What to Log|||%m [%p] |
log_lock_waits|bool||superuser|Reporting and Logging / What to Log|||off|
log_min_duration_sample|integer|ms|superuser|Reporting and Logging / When to Log|-1|2147483647|-1|
log_min_duration_statement|integer|ms|superuser|Reporting and Logging / When to Log|-1|2147483647|-1|
log_min_error_statement|enum||superuser|Reporting and Logging / When to Log|||error|debug5,debug4,debug3,debug2,debug1,info,notice,warning,error,log,fatal,panic
log_min_messages|enum||superuser|Reporting and Logging / When to Log|||warning|debug5,debug4,debug3,debug2,debug1,info,notice,warning,error,log,fatal,panic
log_parameter_max_length|integer|B|superuser|Reporting and Logging / What to Log|-1|1073741823|-1|
log_parameter_max_length_on_error|integer|B|user|Reporting and Logging / What to Log|-1|1073741823|0|
log_parser_stats|bool||superuser|Statistics / Monitoring|||off|
log_planner_stats|bool||superuser|Statistics / Monitoring|||off|
log_recovery_conflict_waits|bool||sighup|Reporting and Logging / What to Log|||off|
log_replication_commands|bool||superuser|Reporting and Logging / What to Log|||off|
log_rotation_age|integer|min|sighup|Reporting and Logging / Where to Log|0|35791394|1440|
log_rotation_size|integer|kB|sighup|Reporting and Logging / Where to Log|0|2097151|10240|
log_startup_progress_interval|integer|ms|sighup|Reporting and Logging / When to Log|0|2147483647|10000|
log_statement|enum||superuser|Reporting and Logging / What to Log|||none|none,ddl,mod,all
log_statement_sample_rate|real||superuser|Reporting and Logging / When to Log|0|1|1|
log_statement_stats|bool||superuser|Statistics / Monitoring|||off|
log_temp_files|integer|kB|superuser|Reporting and Logging / What to Log|-1|2147483647|-1|
log_timezone|string||sighup|Reporting and Logging / What to Log|||GMT|
log_transaction_sample_rate|real||superuser|Reporting and Logging / When to Log|0|1|0|
log_truncate_on_rotation|bool||sighup|Reporting and Logging / Where to Log|||off|
logging_collector|bool||postmaster|Reporting and Logging / Where to Log|||off|
logical_decoding_work_mem|integer|kB|user|Resource Usage / Memory|64|2147483647|65536|
maintenance_io_concurrency|integer||user|Resource Usage / Asynchronous Behavior|0|1000|10|
maintenance_work_mem|integer|kB|user|Resource Usage / Memory|1024|2147483647|65536|
max_connections|integer||postmaster|Connections and Authentication / Connection Settings|1|262143|100|
max_files_per_process|integer||postmaster|Resource Usage / Kernel Resources|64|2147483647|1000|
max_function_args|integer||internal|Preset Options|100|100|100|
max_identifier_length|integer||internal|Preset Options|63|63|63|
max_index_keys|integer||internal|Preset Options|32|32|32|
max_locks_per_transaction|integer||postmaster|Lock Management|10|2147483647|64|
max_logical_replication_workers|integer||postmaster|Replication / Subscribers|0|262143|4|
max_parallel_maintenance_workers|integer||user|Resource Usage / Asynchronous Behavior|0|1024|2|
max_parallel_workers|integer||user|Resource Usage / Asynchronous Behavior|0|1024|8|
max_parallel_workers_per_gather|integer||user|Resource Usage / Asynchronous Behavior|0|1024|2|
max_pred_locks_per_page|integer||sighup|Lock Management|0|2147483647|2|
max_pred_locks_per_relation|integer||sighup|Lock Management|-2147483648|2147483647|-2|
max_pred_locks_per_transaction|integer||postmaster|Lock Management|10|2147483647|64|
max_prepared_transactions|integer||postmaster|Resource Usage / Memory|0|262143|0|
max_replication_slots|integer||postmaster|Replication / Sending Servers|0|262143|10|
max_slot_wal_keep_size|integer|MB|sighup|Replication / Sending Servers|-1|2147483647|-1|
max_stack_depth|integer|kB|superuser|Resource Usage / Memory|100|2147483647|100|
max_standby_archive_delay|integer|ms|sighup|Replication / Standby Servers|-1|2147483647|30000|
max_standby_streaming_delay|integer|ms|sighup|Replication / Standby Servers|-1|2147483647|30000|
max_sync_workers_per_subscription|integer||sighup|Replication / Subscribers|0|262143|2|
max_wal_senders|integer||postmaster|Replication / Sending Servers|0|262143|10|
max_wal_size|integer|MB|sighup|Write-Ahead Log / Checkpoints|2|2147483647|1024|
max_worker_processes|integer||postmaster|Resource Usage / Asynchronous Behavior|0|262143|8|
min_dynamic_shared_memory|integer|MB|postmaster|Resource Usage / Memory|0|2147483647|0|
min_parallel_index_scan_size|integer|8kB|user|Query Tuning / Planner Cost Constants|0|715827882|64|
min_parallel_table_scan_size|integer|8kB|user|Query Tuning / Planner Cost Constants|0|715827882|1024|
min_wal_size|integer|MB|sighup|Write-Ahead Log / Checkpoints|2|2147483647|80|
old_snapshot_threshold|integer|min|postmaster|Resource Usage / Asynchronous Behavior|-1|86400|-1|
parallel_leader_participation|bool||user|Resource Usage / Asynchronous Behavior|||on|
parallel_setup_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|1000|
parallel_tuple_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|0.1|
password_encryption|enum||user|Connections and Authentication / Authentication|||scram-sha-256|md5,scram-sha-256
plan_cache_mode|enum||user|Query Tuning / Other Planner Options|||auto|auto,force_generic_plan,force_custom_plan
port|integer||postmaster|Connections and Authentication / Connection Settings|1|65535|5432|
post_auth_delay|integer|s|backend|Developer Options|0|2147|0|
pre_auth_delay|integer|s|sighup|Developer Options|0|60|0|
primary_conninfo|string||sighup|Replication / Standby Servers||||
primary_slot_name|string||sighup|Replication / Standby Servers||||
promote_trigger_file|string||sighup|Replication / Standby Servers||||
quote_all_identifiers|bool||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||off|
random_page_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|4|
recovery_end_command|string||sighup|Write-Ahead Log / Archive Recovery||||
recovery_init_sync_method|enum||sighup|Error Handling|||fsync|fsync,syncfs
recovery_min_apply_delay|integer|ms|sighup|Replication / Standby Servers|0|2147483647|0|
recovery_prefetch|enum||sighup|Write-Ahead Log / Recovery|||try|off,on,try
recovery_target|string||postmaster|Write-Ahead Log / Recovery Target||||
recovery_target_action|enum||postmaster|Write-Ahead Log / Recovery Target|||pause|pause,promote,shutdown
recovery_target_inclusive|bool||postmaster|Write-Ahead Log / Recovery Target|||on|
recovery_target_lsn|string||postmaster|Write-Ahead Log / Recovery Target||||
recovery_target_name|string||postmaster|Write-Ahead Log / Recovery Target||||
recovery_target_time|string||postmaster|Write-Ahead Log / Recovery Target||||
recovery_target_timeline|string||postmaster|Write-Ahead Log / Recovery Target|||latest|
recovery_target_xid|string||postmaster|Write-Ahead Log / Recovery Target||||
recursive_worktable_factor|real||user|Query Tuning / Other Planner Options|0.001|1e+06|10|
remove_temp_files_after_crash|bool||sighup|Developer Options|||on|
restart_after_crash|bool||sighup|Error Handling|||on|
restore_command|string||sighup|Write-Ahead Log / Archive Recovery||||
restrict_nonsystem_relation_kind|string||user|Client Connection Defaults / Statement Behavior||||
row_security|bool||user|Client Connection Defaults / Statement Behavior|||on|
search_path|string||user|Client Connection Defaults / Statement Behavior|||"$user", public|
segment_size|integer|8kB|internal|Preset Options|131072|131072|131072|
seq_page_cost|real||user|Query Tuning / Planner Cost Constants|0|1.79769e+308|1|
server_encoding|string||internal|Preset Options|||SQL_ASCII|
server_version|string||internal|Preset Options|||15.18 (Debian 15.18-0+deb12u1)|
server_version_num|integer||internal|Preset Options|150018|150018|150018|
session_preload_libraries|string||superuser|Client Connection Defaults / Shared Library Preloading||||
session_replication_role|enum||superuser|Client Connection Defaults / Statement Behavior|||origin|origin,replica,local
shared_buffers|integer|8kB|postmaster|Resource Usage / Memory|16|1073741823|16384|
shared_memory_size|integer|MB|internal|Preset Options|0|2147483647|0|
shared_memory_size_in_huge_pages|integer||internal|Preset Options|-1|2147483647|-1|
shared_memory_type|enum||postmaster|Resource Usage / Memory|||mmap|sysv,mmap
shared_preload_libraries|string||postmaster|Client Connection Defaults / Shared Library Preloading||||
ssl|bool||sighup|Connections and Authentication / SSL|||off|
ssl_ca_file|string||sighup|Connections and Authentication / SSL||||
ssl_cert_file|string||sighup|Connections and Authentication / SSL|||server.crt|
ssl_ciphers|string||sighup|Connections and Authentication / SSL|||HIGH:MEDIUM:+3DES:!aNULL|
ssl_crl_dir|string||sighup|Connections and Authentication / SSL||||
ssl_crl_file|string||sighup|Connections and Authentication / SSL||||
ssl_dh_params_file|string||sighup|Connections and Authentication / SSL||||
ssl_ecdh_curve|string||sighup|Connections and Authentication / SSL|||prime256v1|
ssl_key_file|string||sighup|Connections and Authentication / SSL|||server.key|
ssl_library|string||internal|Preset Options|||OpenSSL|
ssl_max_protocol_version|enum||sighup|Connections and Authentication / SSL||||,TLSv1,TLSv1.1,TLSv1.2,TLSv1.3
ssl_min_protocol_version|enum||sighup|Connections and Authentication / SSL|||TLSv1.2|TLSv1,TLSv1.1,TLSv1.2,TLSv1.3
ssl_passphrase_command|string||sighup|Connections and Authentication / SSL||||
ssl_passphrase_command_supports_reload|bool||sighup|Connections and Authentication / SSL|||off|
ssl_prefer_server_ciphers|bool||sighup|Connections and Authentication / SSL|||on|
standard_conforming_strings|bool||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||on|
statement_timeout|integer|ms|user|Client Connection Defaults / Statement Behavior|0|2147483647|0|
stats_fetch_consistency|enum||user|Statistics / Cumulative Query and Index Statistics|||cache|none,cache,snapshot
superuser_reserved_connections|integer||postmaster|Connections and Authentication / Connection Settings|0|262143|3|
synchronize_seqscans|bool||user|Version and Platform Compatibility / Previous PostgreSQL Versions|||on|
synchronous_commit|enum||user|Write-Ahead Log / Settings|||on|local,remote_write,remote_apply,on,off
synchronous_standby_names|string||sighup|Replication / Primary Server||||
syslog_facility|enum||sighup|Reporting and Logging / Where to Log|||local0|local0,local1,local2,local3,local4,local5,local6,local7
syslog_ident|string||sighup|Reporting and Logging / Where to Log|||postgres|
syslog_sequence_numbers|bool||sighup|Reporting and Logging / Where to Log|||on|
syslog_split_messages|bool||sighup|Reporting and Logging / Where to Log|||on|
tcp_keepalives_count|integer||user|Connections and Authentication / Connection Settings|0|2147483647|0|
tcp_keepalives_idle|integer|s|user|Connections and Authentication / Connection Settings|0|2147483647|0|
tcp_keepalives_interval|integer|s|user|Connections and Authentication / Connection Settings|0|2147483647|0|
tcp_user_timeout|integer|ms|user|Connections and Authentication / Connection Settings|0|2147483647|0|
temp_buffers|integer|8kB|user|Resource Usage / Memory|100|1073741823|1024|
temp_file_limit|integer|kB|superuser|Resource Usage / Disk|-1|2147483647|-1|
temp_tablespaces|string||user|Client Connection Defaults / Statement Behavior||||
TimeZone|string||user|Client Connection Defaults / Locale and Formatting|||GMT|
timezone_abbreviations|string||user|Client Connection Defaults / Locale and Formatting||||
trace_notify|bool||user|Developer Options|||off|
trace_recovery_messages|enum||sighup|Developer Options|||log|debug5,debug4,debug3,debug2,debug1,log,notice,warning,error
trace_sort|bool||user|Developer Options|||off|
track_activities|bool||superuser|Statistics / Cumulative Query and Index Statistics|||on|
track_activity_query_size|integer|B|postmaster|Statistics / Cumulative Query and Index Statistics|100|1048576|1024|
track_commit_timestamp|bool||postmaster|Replication / Sending Servers|||off|
track_counts|bool||superuser|Statistics / Cumulative Query and Index Statistics|||on|
track_functions|enum||superuser|Statistics / Cumulative Query and Index Statistics|||none|none,pl,all
track_io_timing|bool||superuser|Statistics / Cumulative Query and Index Statistics|||off|
track_wal_io_timing|bool||superuser|Statistics / Cumulative Query and Index Statistics|||off|
transaction_deferrable|bool||user|Client Connection Defaults / Statement Behavior|||off|
transaction_isolation|enum||user|Client Connection Defaults / Statement Behavior|||read committed|serializable,repeatable read,read committed,read uncommitted
transaction_read_only|bool||user|Client Connection Defaults / Statement Behavior|||off|
transform_null_equals|bool||user|Version and Platform Compatibility / Other Platforms and Clients|||off|
unix_socket_directories|string||postmaster|Connections and Authentication / Connection Settings|||/var/run/postgresql|
unix_socket_group|string||postmaster|Connections and Authentication / Connection Settings||||
unix_socket_permissions|integer||postmaster|Connections and Authentication / Connection Settings|0|511|511|
update_process_title|bool||superuser|Reporting and Logging / Process Title|||on|
vacuum_cost_delay|real|ms|user|Resource Usage / Cost-Based Vacuum Delay|0|100|0|
vacuum_cost_limit|integer||user|Resource Usage / Cost-Based Vacuum Delay|1|10000|200|
vacuum_cost_page_dirty|integer||user|Resource Usage / Cost-Based Vacuum Delay|0|10000|20|
vacuum_cost_page_hit|integer||user|Resource Usage / Cost-Based Vacuum Delay|0|10000|1|
vacuum_cost_page_miss|integer||user|Resource Usage / Cost-Based Vacuum Delay|0|10000|2|
vacuum_defer_cleanup_age|integer||sighup|Replication / Primary Server|0|1000000|0|
vacuum_failsafe_age|integer||user|Client Connection Defaults / Statement Behavior|0|2100000000|1600000000|
vacuum_freeze_min_age|integer||user|Client Connection Defaults / Statement Behavior|0|1000000000|50000000|
vacuum_freeze_table_age|integer||user|Client Connection Defaults / Statement Behavior|0|2000000000|150000000|
vacuum_multixact_failsafe_age|integer||user|Client Connection Defaults / Statement Behavior|0|2100000000|1600000000|
vacuum_multixact_freeze_min_age|integer||user|Client Connection Defaults / Statement Behavior|0|1000000000|5000000|
vacuum_multixact_freeze_table_age|integer||user|Client Connection Defaults / Statement Behavior|0|2000000000|150000000|
wal_block_size|integer||internal|Preset Options|8192|8192|8192|
wal_buffers|integer|8kB|postmaster|Write-Ahead Log / Settings|-1|262143|-1|
wal_compression|enum||superuser|Write-Ahead Log / Settings|||off|pglz,lz4,zstd,on,off
wal_consistency_checking|string||superuser|Developer Options||||
wal_decode_buffer_size|integer|B|postmaster|Write-Ahead Log / Recovery|65536|1073741823|524288|
wal_init_zero|bool||superuser|Write-Ahead Log / Settings|||on|
wal_keep_size|integer|MB|sighup|Replication / Sending Servers|0|2147483647|0|
wal_level|enum||postmaster|Write-Ahead Log / Settings|||replica|minimal,replica,logical
wal_log_hints|bool||postmaster|Write-Ahead Log / Settings|||off|
wal_receiver_create_temp_slot|bool||sighup|Replication / Standby Servers|||off|
wal_receiver_status_interval|integer|s|sighup|Replication / Standby Servers|0|2147483|10|
wal_receiver_timeout|integer|ms|sighup|Replication / Standby Servers|0|2147483647|60000|
wal_recycle|bool||superuser|Write-Ahead Log / Settings|||on|
wal_retrieve_retry_interval|integer|ms|sighup|Replication / Standby Servers|1|2147483647|5000|
wal_segment_size|integer|B|internal|Preset Options|1048576|1073741824|16777216|
wal_sender_timeout|integer|ms|user|Replication / Sending Servers|0|2147483647|60000|
wal_skip_threshold|integer|kB|user|Write-Ahead Log / Settings|0|2147483647|2048|
wal_sync_method|enum||sighup|Write-Ahead Log / Settings|||fdatasync|fsync,fdatasync,open_sync,open_datasync
wal_writer_delay|integer|ms|sighup|Write-Ahead Log / Settings|1|10000|200|
wal_writer_flush_after|integer|8kB|sighup|Write-Ahead Log / Settings|0|2147483647|128|
work_mem|integer|kB|user|Resource Usage / Memory|64|2147483647|4096|
xmlbinary|enum||user|Client Connection Defaults / Statement Behavior|||base64|base64,hex
xmloption|enum||user|Client Connection Defaults / Statement Behavior|||content|content,document
zero_damaged_pages|bool||superuser|Developer Options|||off|
"""
