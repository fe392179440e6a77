// Package registry finds a Harbor dataset's task dirs: in a dataset dir
// (DatasetTaskDirs), or through a registry.json (LoadRegistry,
// FetchDataset, RegistryTaskDirs), fetched into a cache dir
// (DefaultCacheDir). Harbor's rules for running a task are runner/harbor's.
package registry
